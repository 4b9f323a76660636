/* rge op library C ABI, version 1 (the same ABI as crates/rge-ops/src/abi.rs).
 *
 * An op library is a shared library exporting
 *
 *     const RgeOpLibrary *rge_op_library(void);
 *
 * that returns a static table. rge checks abi_version (a library built for another version is
 * refused), parses each op's prototype notation, and registers the ops with the registry's
 * override window open. Prototype notation: signature "x:T, bias?:T, xs*:T -> y:T",
 * attributes "scale:float=1.0, axis:int!", type constraints "T: float, float16; I: int64".
 * Data types are ge::DataType values (DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT32 = 3,
 * DT_INT64 = 9, DT_BOOL = 12, DT_UNDEFINED = 28); formats ge::Format values (ND = 2).
 */
#ifndef RGE_OPS_H
#define RGE_OPS_H

#include <stddef.h>
#include <stdint.h>

#define RGE_OPS_ABI_VERSION 1u
#define RGE_MAX_RANK 16

enum { RGE_ATTR_INT = 0, RGE_ATTR_FLOAT = 1, RGE_ATTR_STRING = 2, RGE_ATTR_INTS = 3, RGE_ATTR_FLOATS = 4 };

typedef struct RgeTensor {
    uint32_t present;     /* 0: an omitted optional input */
    int32_t dtype;        /* ge::DataType */
    uint32_t format;      /* ge::Format */
    int32_t rank;         /* -1: unknown rank */
    const int64_t *dims;  /* rank dims, -1 = unknown dim */
} RgeTensor;

typedef struct RgeTensorOut {
    int32_t dtype;
    uint32_t format;
    int32_t rank;         /* <= RGE_MAX_RANK, or -1 for an unknown rank */
    int64_t dims[RGE_MAX_RANK];
} RgeTensorOut;

typedef struct RgeAttr {
    const char *name;
    uint32_t kind;        /* RGE_ATTR_* */
    int64_t i;
    double f;
    const char *s;
    const int64_t *ints;
    const double *floats;
    size_t len;
} RgeAttr;

typedef struct RgeInferArgs {
    const char *node_name;
    int64_t opset;
    const RgeTensor *inputs;
    size_t n_inputs;
    const RgeAttr *attrs;
    size_t n_attrs;
    RgeTensorOut *outputs;
    size_t n_outputs;
    char *error;          /* message buffer for a non-zero return */
    size_t error_cap;
} RgeInferArgs;

typedef int32_t (*RgeInferFn)(void *user_data, RgeInferArgs *args);

typedef struct RgeOpDef {
    const char *domain;
    const char *op_type;
    int64_t since_version;
    const char *signature;
    const char *attributes;        /* may be NULL */
    const char *type_constraints;  /* may be NULL */
    RgeInferFn infer;
    void *user_data;
} RgeOpDef;

typedef struct RgeOpLibrary {
    uint32_t abi_version;
    const char *name;
    size_t op_count;
    const RgeOpDef *ops;
} RgeOpLibrary;

const RgeOpLibrary *rge_op_library(void);

#endif /* RGE_OPS_H */
