//! The `kopf-audit` binary: the command line lives in the library (`cli`).

fn main() -> std::process::ExitCode {
    kopf_audit::main()
}
