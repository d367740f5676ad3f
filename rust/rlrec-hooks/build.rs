//! Compiles rlrec's own protocol definitions (the repository's .proto
//! files, two directories up) into Rust: the event wire form
//! rlrec.events.v1, the space types it embeds (rlmesh.spaces.v1) and the
//! ingest service client (rlrec.ingest.v1).

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let root = manifest.join("../..").canonicalize()?;
    let protos = [
        root.join("schema/spacesv1/spaces.proto"),
        root.join("events/eventsv1/events.proto"),
        root.join("ingest/ingestv1/ingest.proto"),
    ];
    for p in &protos {
        println!("cargo:rerun-if-changed={}", p.display());
    }
    // The space types are rlmesh's own (same package, names and field
    // numbers as schema/spacesv1/spaces.proto, which events.proto imports):
    // payloads go into events as the runtime has them, without conversion.
    tonic_prost_build::configure()
        .build_server(false)
        .bytes(".")
        .extern_path(
            ".rlmesh.spaces.v1",
            "::rlmesh_runtime::rlmesh_proto::spaces::v1",
        )
        .compile_protos(&protos[1..], &[root])?;
    Ok(())
}
