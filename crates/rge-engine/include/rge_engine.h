/*
 * rge engine plugin ABI, version 1 (the same contract as rge_engine::abi in Rust).
 *
 * A plugin is a shared library exporting one symbol:
 *
 *     const RgePluginHeader *rge_engine_plugin_entry(void);
 *
 * It returns a pointer to a static function table that starts with RgePluginHeader in every
 * ABI version, so a host reads the version first and refuses a plugin of another version
 * without calling anything else. Version 1's table is RgeEnginePluginV1.
 *
 * Data crosses as UTF-8 JSON documents (schemas in docs/engines.md). The host lends input
 * bytes (RgeBytes) for the length of one call; the plugin returns output bytes (RgeBuf) that
 * the host hands back to the plugin's free_buf. Return codes: RGE_OK (0), or a negative code
 * with a UTF-8 message in the out buffer; check_supported returns RGE_SUPPORTED (1) or
 * RGE_NOT_SUPPORTED (0, the reason in the out buffer). Every function may be called from
 * several threads at once, except initialize and finalize, which the host calls once each,
 * first and last.
 */
#ifndef RGE_ENGINE_H
#define RGE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RGE_ENGINE_ABI_VERSION 1u
#define RGE_ENGINE_PLUGIN_ENTRY "rge_engine_plugin_entry"

#define RGE_OK 0
#define RGE_SUPPORTED 1
#define RGE_NOT_SUPPORTED 0
#define RGE_ERROR (-1)

/* Bytes lent by the caller for the length of one call. */
typedef struct RgeBytes {
    const uint8_t *ptr;
    size_t len;
} RgeBytes;

/* Bytes returned by the plugin; released with the plugin's free_buf. Empty: {NULL, 0}. */
typedef struct RgeBuf {
    uint8_t *ptr;
    size_t len;
} RgeBuf;

/* The first fields of every version's table. */
typedef struct RgePluginHeader {
    uint32_t abi_version; /* RGE_ENGINE_ABI_VERSION */
    uint32_t table_size;  /* sizeof the whole table */
} RgePluginHeader;

/* Version 1. Optional functions may be NULL. Engine indexes are positions in get_engines. */
typedef struct RgeEnginePluginV1 {
    RgePluginHeader header;
    /* GE's Initialize(options): options as a JSON object of strings. */
    int32_t (*initialize)(RgeBytes options, RgeBuf *err);
    /* The engines: {"engines": [...]} (attributes, flags, op infos, capabilities). */
    int32_t (*get_engines)(RgeBuf *out);
    /* GE's CheckSupported for one op (JSON). */
    int32_t (*check_supported)(uint32_t engine, RgeBytes op, RgeBuf *reason);
    /* Optional. GE's CompileOp for one op; out: {"attrs": {...}} to set on it. */
    int32_t (*compile_op)(uint32_t engine, RgeBytes op, RgeBuf *out);
    /* Optional. stage 0 original, 1 fused, 2 whole; graph JSON in; out: an edit list
       {"set_attrs": [{"node": name, "attrs": {...}}]}. */
    int32_t (*optimize_graph)(uint32_t engine, uint32_t stage, RgeBytes graph, RgeBuf *out);
    /* Optional. GE's CalcOpRunningParam; out: {"output_sizes": [...], "workspace": [...]}. */
    int32_t (*calc_running_params)(uint32_t engine, RgeBytes op, RgeBuf *out);
    /* Optional. GE's GenerateTask; out: the task bytes (opaque to the host). */
    int32_t (*generate_task)(uint32_t engine, RgeBytes op, RgeBuf *out);
    /* GE's Finalize, before the library is unloaded. */
    int32_t (*finalize)(void);
    /* Releases a buffer this plugin returned. */
    void (*free_buf)(RgeBuf buf);
} RgeEnginePluginV1;

typedef const RgePluginHeader *(*RgeEnginePluginEntry)(void);

#ifdef __cplusplus
}
#endif

#endif /* RGE_ENGINE_H */
