//! Compiles the agent protocol with the vendored protoc, so no system protoc is needed.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    println!("cargo:rerun-if-changed=proto/agent.proto");
    tonic_prost_build::configure().compile_protos(&["proto/agent.proto"], &["proto"])?;
    Ok(())
}
