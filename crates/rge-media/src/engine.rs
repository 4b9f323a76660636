//! The `media` engine (the seed's DNN_VM_DVPP, cost 5): its attributes and kernel
//! definitions. It is the only engine with ImageDecoder and the GE/DVPP-style image ops, so
//! they are placed here whatever its cost; without it they have no engine.

use rge_engine::{
    BasicEngine, EngineAttributes, EngineKind, EngineResult, KernelStore, RuntimeType,
};
use rge_kernels::{DType, KernelDef, KernelSet, PortDef, TypeSet};

use crate::kernels as k;

/// The engine's name.
pub const MEDIA: &str = "media";

/// The media engine's kernel definitions.
pub fn kernel_set() -> KernelSet {
    let u8s = || PortDef::types(TypeSet::of(&[DType::Uint8]));
    let images = || PortDef::types(TypeSet::of(&[DType::Uint8, DType::Float]));
    let ints = || PortDef::types(TypeSet::of(&[DType::Int32, DType::Int64]));
    let f32s = || PortDef::types(TypeSet::of(&[DType::Float]));
    let mut set = KernelSet::new();
    set.add(
        KernelDef::new(
            "media.ImageDecoder",
            "ImageDecoder",
            k::create_image_decoder,
        )
        .inputs(vec![u8s()])
        .outputs(vec![u8s()]),
    );
    set.add(
        KernelDef::new("media.DecodeImage", "DecodeImage", k::create_decode_image)
            .inputs(vec![u8s()])
            .outputs(vec![u8s()]),
    );
    for (name, f) in [
        (
            "ResizeBilinearV2",
            k::create_resize_bilinear as rge_kernels::KernelFactory,
        ),
        ("ResizeNearestNeighborV2", k::create_resize_nearest),
        ("ResizeArea", k::create_resize_area),
    ] {
        set.add(
            KernelDef::new(format!("media.{name}"), name, f)
                .inputs(vec![images(), ints()])
                .outputs(vec![images()]),
        );
    }
    set.add(
        KernelDef::new("media.CropImage", "CropImage", k::create_crop_image)
            .inputs(vec![images()])
            .outputs(vec![images()]),
    );
    set.add(
        KernelDef::new(
            "media.CropAndResize",
            "CropAndResize",
            k::create_crop_and_resize,
        )
        .inputs(vec![images(), f32s(), ints(), ints()])
        .outputs(vec![f32s()]),
    );
    set.add(
        KernelDef::new(
            "media.ConvertColor",
            "ConvertColor",
            k::create_convert_color,
        )
        .inputs(vec![u8s()])
        .outputs(vec![u8s()]),
    );
    set.add(
        KernelDef::new(
            "media.NormalizeImage",
            "NormalizeImage",
            k::create_normalize_image,
        )
        .inputs(vec![images()])
        .outputs(vec![f32s()]),
    );
    set
}

/// The media engine: cost 5, device runtime (the seed's DVPP), its kernels.
pub fn media_engine() -> EngineResult<BasicEngine> {
    let engine = match BasicEngine::standard(MEDIA) {
        Some(e) => e,
        None => BasicEngine::new(EngineAttributes {
            name: MEDIA.into(),
            mem_types: vec!["HBM".into()],
            compute_cost: 5,
            runtime: RuntimeType::Device,
            input_format: rge_ir::Format::RESERVED,
            output_format: rge_ir::Format::RESERVED,
            kind: EngineKind::Atomic,
        }),
    };
    Ok(engine.with_store(KernelStore::new(MEDIA, "media_kernels", 5, kernel_set())))
}
