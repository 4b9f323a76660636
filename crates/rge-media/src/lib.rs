//! rge's `media` engine (the seed's DNN_VM_DVPP, cost 5): image decode (ONNX ImageDecoder,
//! GE's DecodeImage), resizes (ResizeBilinearV2, ResizeNearestNeighborV2, ResizeArea), crops
//! (CropImage, CropAndResize), colour conversion (ConvertColor: RGB, BGR, GRAY, NV12, NV21)
//! and normalization (NormalizeImage). See `docs/media-engine.md`.

pub mod color;
pub mod decode;
pub mod engine;
pub mod kernels;
pub mod resize;

pub use engine::{kernel_set, media_engine, MEDIA};
