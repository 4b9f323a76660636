/*
 * rge engine plugin ABI, version 2 (the same contract as rge_engine::abi in Rust).
 *
 * A plugin is a shared library exporting one symbol:
 *
 *     const RgePluginHeader *rge_engine_plugin_entry(void);
 *
 * It returns a pointer to a static function table that starts with RgePluginHeader in every
 * ABI version, so a host reads the version first and refuses a plugin of another version
 * without calling anything else. Version 2's table is RgeEnginePluginV2; a host refuses a
 * plugin of any other version (version 1 had no runnable kernels).
 *
 * Data crosses as UTF-8 JSON documents (schemas in docs/engines.md) and tensors as
 * RgeTensorView. The host lends input bytes (RgeBytes) and views for the length of one call;
 * the plugin returns output bytes (RgeBuf) that the host hands back to the plugin's free_buf.
 * Return codes: RGE_OK (0), RGE_ERROR (-1) with a UTF-8 message in the out buffer, or
 * RGE_PANICKED (-2) when the plugin caught a panic or exception (message likewise; the
 * plugin stays usable); check_supported returns RGE_SUPPORTED (1) or RGE_NOT_SUPPORTED (0,
 * the reason in the out buffer). No exception or panic may cross the boundary. Every function
 * may be called from several threads at once (kernel functions too, on one handle), except
 * initialize and finalize, which the host calls once each, first and last.
 */
#ifndef RGE_ENGINE_H
#define RGE_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RGE_ENGINE_ABI_VERSION 2u
#define RGE_ENGINE_PLUGIN_ENTRY "rge_engine_plugin_entry"

#define RGE_OK 0
#define RGE_SUPPORTED 1
#define RGE_NOT_SUPPORTED 0
#define RGE_ERROR (-1)
#define RGE_PANICKED (-2)

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

/* A kernel instance from kernel_create: opaque to the host (may be NULL), freed by
   kernel_destroy. */
typedef void *RgeKernelHandle;

/* A tensor in the host's memory. Inputs are lent read-only for one call; outputs are memory
   the host allocated from kernel_infer's answer, for the plugin to fill. An absent optional
   tensor is all zero (dtype 0 = ONNX UNDEFINED). */
typedef struct RgeTensorView {
    int32_t dtype;       /* ONNX TensorProto.DataType code: 1 FLOAT, 7 INT64, ... (no strings) */
    uint32_t rank;
    const int64_t *dims; /* rank dims; NULL when rank is 0 */
    void *data;          /* packed row-major elements, 16-byte aligned when len > 0 */
    size_t len;          /* bytes at data */
} RgeTensorView;

/* Version 2. Optional functions may be NULL. Engine indexes are positions in get_engines. */
typedef struct RgeEnginePluginV2 {
    RgePluginHeader header;
    /* GE's Initialize(options): options as a JSON object of strings. */
    int32_t (*initialize)(RgeBytes options, RgeBuf *err);
    /* The engines: {"engines": [...]} (attributes, flags, op infos, kernels, capabilities). */
    int32_t (*get_engines)(RgeBuf *out);
    /* Optional. GE's CheckSupported for one op (JSON); for ops a kernel definition fits,
       asked after the definition's types and opsets match. */
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
    /* The kernel functions: required when an engine lists kernels, else may be NULL. */
    /* A kernel for one node: op JSON {"name", "type", "domain", "opset", "attrs",
       "inputs": [{"dtype": "FLOAT" | null}], "outputs": [...]}; writes *handle. */
    int32_t (*kernel_create)(uint32_t engine, RgeBytes op, RgeKernelHandle *handle, RgeBuf *err);
    /* Before every compute, from the inputs (data included); out:
       {"outputs": [{"dtype": "FLOAT", "shape": [2, 3]} | null, ...], "workspace": bytes}. */
    int32_t (*kernel_infer)(RgeKernelHandle handle, const RgeTensorView *inputs, size_t n_inputs,
                            RgeBuf *out);
    /* Reads the inputs, fills the outputs (allocated as kernel_infer answered), may use
       workspace_len scratch bytes (16-byte aligned; NULL when 0). */
    int32_t (*kernel_compute)(RgeKernelHandle handle, const RgeTensorView *inputs,
                              size_t n_inputs, const RgeTensorView *outputs, size_t n_outputs,
                              void *workspace, size_t workspace_len, RgeBuf *err);
    /* Frees a kernel; called once per handle, when no compute runs. */
    void (*kernel_destroy)(RgeKernelHandle handle);
} RgeEnginePluginV2;

typedef const RgePluginHeader *(*RgeEnginePluginEntry)(void);

#ifdef __cplusplus
}
#endif

#endif /* RGE_ENGINE_H */
