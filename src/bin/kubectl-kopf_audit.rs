//! `kubectl-kopf_audit`: the same binary under the name kubectl looks for, so that
//! `kubectl kopf-audit check ...` and `kubectl kopf-audit report -A` run it as a plugin
//! (kubectl maps the dash of `kopf-audit` to the underscore of the file name).

fn main() -> std::process::ExitCode {
    kopf_audit::main()
}
