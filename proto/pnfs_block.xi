/*
 * pNFS layout bodies for block storage: the block/volume layout (RFC 5663) and its successor, the
 * SCSI layout (RFC 8154). They travel as opaques inside layout_content4, device_addr4 and
 * layoutupdate4; proto/layout.h codes them to and from those opaques. Names are the RFCs'.
 * Included by nfs41.x (one rpcgen unit: rpcgen must see deviceid4's definition to code it).
 */

/* ---- RFC 5663: block/volume layout ---------------------------------------------------------- */
enum pnfs_block_volume_type4 {
	PNFS_BLOCK_VOLUME_SIMPLE = 0,   /* one LU, found by its signature */
	PNFS_BLOCK_VOLUME_SLICE  = 1,   /* a byte range of another volume */
	PNFS_BLOCK_VOLUME_CONCAT = 2,   /* volumes one after another */
	PNFS_BLOCK_VOLUME_STRIPE = 3    /* volumes striped in stripe units */
};

const PNFS_BLOCK_MAX_SIG_COMP = 16;

/* A signature component; a negative offset counts from the end of the volume. */
struct pnfs_block_sig_component4 {
	int64_t         bsc_sig_offset;
	opaque          bsc_contents<PROTO_BLOCK_SIG_MAX>;
};

struct pnfs_block_simple_volume_info4 {
	pnfs_block_sig_component4 bsv_ds<PNFS_BLOCK_MAX_SIG_COMP>;
};

struct pnfs_block_slice_volume_info4 {
	offset4         bsv_start;
	length4         bsv_length;
	uint32_t        bsv_volume;     /* index into bda_volumes */
};

struct pnfs_block_concat_volume_info4 {
	uint32_t        bcv_volumes<PROTO_BLOCK_VOLUMES_MAX>;
};

struct pnfs_block_stripe_volume_info4 {
	length4         bsv_stripe_unit;
	uint32_t        bsv_volumes<PROTO_BLOCK_VOLUMES_MAX>;
};

union pnfs_block_volume4 switch (pnfs_block_volume_type4 type) {
case PNFS_BLOCK_VOLUME_SIMPLE:
	pnfs_block_simple_volume_info4 bv_simple_info;
case PNFS_BLOCK_VOLUME_SLICE:
	pnfs_block_slice_volume_info4 bv_slice_info;
case PNFS_BLOCK_VOLUME_CONCAT:
	pnfs_block_concat_volume_info4 bv_concat_info;
case PNFS_BLOCK_VOLUME_STRIPE:
	pnfs_block_stripe_volume_info4 bv_stripe_info;
};

/* da_addr_body of LAYOUT4_BLOCK_VOLUME; the last volume is the one the device ID names. */
struct pnfs_block_deviceaddr4 {
	pnfs_block_volume4 bda_volumes<PROTO_BLOCK_VOLUMES_MAX>;
};

enum pnfs_block_extent_state4 {
	PNFS_BLOCK_READ_WRITE_DATA = 0, /* valid for reading and writing */
	PNFS_BLOCK_READ_DATA       = 1, /* valid for reading only */
	PNFS_BLOCK_INVALID_DATA    = 2, /* allocated, never written: reads as zeros */
	PNFS_BLOCK_NONE_DATA       = 3  /* a hole: no storage behind it */
};

struct pnfs_block_extent4 {
	deviceid4       bex_vol_id;
	offset4         bex_file_offset;
	length4         bex_length;
	offset4         bex_storage_offset;
	pnfs_block_extent_state4 bex_state;
};

/* loc_body */
struct pnfs_block_layout4 {
	pnfs_block_extent4 blo_extents<PROTO_BLOCK_EXTENTS_MAX>;
};

/* lou_body */
struct pnfs_block_layoutupdate4 {
	pnfs_block_extent4 blu_commit_list<PROTO_BLOCK_EXTENTS_MAX>;
};

/* loh_body */
struct pnfs_block_layouthint4 {
	uint64_t        blh_maximum_io_time;
};

/* ---- RFC 8154: SCSI layout ---------------------------------------------------------------- */
enum pnfs_scsi_volume_type4 {
	PNFS_SCSI_VOLUME_SLICE  = 1,
	PNFS_SCSI_VOLUME_CONCAT = 2,
	PNFS_SCSI_VOLUME_STRIPE = 3,
	PNFS_SCSI_VOLUME_BASE   = 4     /* one LU, found by its SCSI device designator */
};

/* Code sets and designator types of SPC-4's Device Identification VPD page (0x83). */
enum pnfs_scsi_code_set {
	PS_CODE_SET_BINARY = 1,
	PS_CODE_SET_ASCII  = 2,
	PS_CODE_SET_UTF8   = 3
};

enum pnfs_scsi_designator_type {
	PS_DESIGNATOR_T10   = 1,
	PS_DESIGNATOR_EUI64 = 2,
	PS_DESIGNATOR_NAA   = 3,
	PS_DESIGNATOR_NAME  = 8
};

/* sbv_pr_key: the persistent-reservation key the client registers (and is fenced by). */
struct pnfs_scsi_base_volume_info4 {
	pnfs_scsi_code_set        sbv_code_set;
	pnfs_scsi_designator_type sbv_designator_type;
	opaque                    sbv_designator<PROTO_SCSI_DESIGNATOR_MAX>;
	uint64_t                  sbv_pr_key;
};

struct pnfs_scsi_slice_volume_info4 {
	offset4         ssv_start;
	length4         ssv_length;
	uint32_t        ssv_volume;
};

struct pnfs_scsi_concat_volume_info4 {
	uint32_t        scv_volumes<PROTO_BLOCK_VOLUMES_MAX>;
};

struct pnfs_scsi_stripe_volume_info4 {
	length4         ssv_stripe_unit;
	uint32_t        ssv_volumes<PROTO_BLOCK_VOLUMES_MAX>;
};

union pnfs_scsi_volume4 switch (pnfs_scsi_volume_type4 type) {
case PNFS_SCSI_VOLUME_BASE:
	pnfs_scsi_base_volume_info4 sv_simple_info;
case PNFS_SCSI_VOLUME_SLICE:
	pnfs_scsi_slice_volume_info4 sv_slice_info;
case PNFS_SCSI_VOLUME_CONCAT:
	pnfs_scsi_concat_volume_info4 sv_concat_info;
case PNFS_SCSI_VOLUME_STRIPE:
	pnfs_scsi_stripe_volume_info4 sv_stripe_info;
};

/* da_addr_body of LAYOUT4_SCSI */
struct pnfs_scsi_deviceaddr4 {
	pnfs_scsi_volume4 sda_volumes<PROTO_BLOCK_VOLUMES_MAX>;
};

enum pnfs_scsi_extent_state4 {
	PNFS_SCSI_READ_WRITE_DATA = 0,
	PNFS_SCSI_READ_DATA       = 1,
	PNFS_SCSI_INVALID_DATA    = 2,
	PNFS_SCSI_NONE_DATA       = 3
};

struct pnfs_scsi_extent4 {
	deviceid4       se_vol_id;
	offset4         se_file_offset;
	length4         se_length;
	offset4         se_storage_offset;
	pnfs_scsi_extent_state4 se_state;
};

/* loc_body */
struct pnfs_scsi_layout4 {
	pnfs_scsi_extent4 sl_extents<PROTO_BLOCK_EXTENTS_MAX>;
};

/* lou_body: the SCSI layout commits byte ranges, not extents. */
struct pnfs_scsi_range4 {
	offset4         sr_file_offset;
	length4         sr_length;
};

struct pnfs_scsi_layoutupdate4 {
	pnfs_scsi_range4 slu_commit_list<PROTO_BLOCK_EXTENTS_MAX>;
};

/* loh_body */
struct pnfs_scsi_layouthint4 {
	uint64_t        slh_maximum_io_time;
};
