use super::*;

/// The range a file's pin allows, as text, whether it is locked, and its line.
fn read(path: &str, text: &str) -> Option<(String, bool, u32)> {
    pin(path, text).map(|p| (p.range.to_string(), p.locked, p.location.line))
}

/// The range of a `requirements.txt` holding `text`.
fn req(text: &str) -> Option<String> {
    read("requirements.txt", text).map(|(range, _, _)| range)
}

#[test]
fn requirement_lines_are_ranges() {
    assert_eq!(
        read("requirements.txt", "kubernetes==29.0\nkopf==1.37.2\n"),
        Some(("==1.37.2".into(), false, 2))
    );
    assert_eq!(
        req("kopf[full-auth]>=1.38,<2").as_deref(),
        Some(">=1.38.0,<2.0.0")
    );
    assert_eq!(
        req("kopf~=1.41.0  # latest").as_deref(),
        Some(">=1.41.0,<1.42.0")
    );
    assert_eq!(req("kopf~=1.41").as_deref(), Some(">=1.41.0,<2.0.0"));
    assert_eq!(req("kopf==1.37.*").as_deref(), Some(">=1.37.0,<1.38.0"));
    assert_eq!(
        req("kopf (>1.38, <=1.40)").as_deref(),
        Some(">1.38.0,<=1.40.0")
    );
    assert_eq!(
        req("kopf>=1.38; python_version > '3.8'").as_deref(),
        Some(">=1.38.0")
    );
    assert_eq!(req("kopf!=1.40.0,>=1.38").as_deref(), Some(">=1.38.0"));
    assert_eq!(req("kopf\n"), None);
    assert_eq!(req("kopf-audit==0.1.0\nmykopf==2.0\nkopf_x==3"), None);
}

#[test]
fn poetry_carets_and_tildes_are_ranges_not_pins() {
    let poetry = |spec: &str| {
        read(
            "pyproject.toml",
            &format!("[tool.poetry.dependencies]\n{spec}\n"),
        )
        .map(|(range, _, _)| range)
    };
    assert_eq!(
        poetry("kopf = \"^1.38.0\"").as_deref(),
        Some(">=1.38.0,<2.0.0")
    );
    assert_eq!(
        poetry("kopf = \"^0.27\"").as_deref(),
        Some(">=0.27.0,<0.28.0")
    );
    assert_eq!(
        poetry("kopf = \"~1.38\"").as_deref(),
        Some(">=1.38.0,<1.39.0")
    );
    assert_eq!(poetry("kopf = \"1.38.0\"").as_deref(), Some("==1.38.0"));
    assert_eq!(poetry("kopf = \"*\"").as_deref(), Some("any version"));
    assert_eq!(
        poetry("kopf = {version = \">=1.38,<1.41\", extras = [\"full-auth\"]}").as_deref(),
        Some(">=1.38.0,<1.41.0")
    );
    assert_eq!(
        poetry("kopf = {git = \"https://example.invalid/kopf\"}"),
        None
    );
    let pep621 = read(
        "pyproject.toml",
        "[project]\ndependencies = [\n  \"kopf>=1.38\",\n]\n",
    );
    assert_eq!(pep621, Some((">=1.38.0".into(), false, 3)));
    let pipfile = read("Pipfile", "[packages]\nkopf = \"==1.39.1\"\n");
    assert_eq!(pipfile, Some(("==1.39.1".into(), false, 2)));
    let setup_cfg = read(
        "setup.cfg",
        "[options]\ninstall_requires =\n    kopf>=1.35\n",
    );
    assert_eq!(setup_cfg, Some((">=1.35.0".into(), false, 3)));
}

#[test]
fn pip_install_lines_of_a_dockerfile() {
    let docker = |text: &str| read("Dockerfile", text).map(|(range, _, line)| (range, line));
    assert_eq!(
        docker("FROM python\nRUN pip install --no-cache-dir kopf==1.40.1 kubernetes\n"),
        Some(("==1.40.1".into(), 2))
    );
    assert_eq!(
        docker("FROM python\nRUN pip install \"kopf>=1.38,<2\"\n"),
        Some((">=1.38.0,<2.0.0".into(), 2))
    );
    assert_eq!(
        docker("FROM python\nCMD [\"kopf\", \"run\", \"op.py\"]\n"),
        None
    );
    assert_eq!(docker("FROM python\nCMD kopf run -A op.py\n"), None);
}

#[test]
fn lock_files_and_pip_compile_output_give_the_installed_version() {
    assert_eq!(
        read(
            "poetry.lock",
            "[[package]]\nname = \"kopf\"\nversion = \"1.38.0\"\n"
        ),
        Some(("==1.38.0".into(), true, 3))
    );
    assert_eq!(
        read(
            "Pipfile.lock",
            "{\"default\": {\n \"kopf\": {\"version\": \"==1.39.1\"}}}"
        ),
        Some(("==1.39.1".into(), true, 2))
    );
    assert_eq!(
        read(
            "requirements.txt",
            "kopf==1.38.0\n    # via -r requirements.in\n"
        ),
        Some(("==1.38.0".into(), true, 1))
    );
    assert_eq!(
        read(
            "requirements.txt",
            "kopf==1.38.0  # via -r requirements.in\n"
        ),
        Some(("==1.38.0".into(), true, 1))
    );
}

/// uv.lock decides the version as poetry.lock does: the resolved `version` of the
/// package named kopf, locked, at its line.
#[test]
fn uv_lock_decides_the_version() {
    let lock = "version = 1\nrequires-python = \">=3.11\"\n\n[[package]]\nname = \"kopf\"\nversion = \"1.44.6\"\nsource = { registry = \"https://pypi.org/simple\" }\n\n[[package]]\nname = \"kopf-extra\"\nversion = \"9.9.9\"\n";
    assert_eq!(read("uv.lock", lock), Some(("==1.44.6".into(), true, 6)));
}
