use super::*;

/// A file's facts; the test files are all within lint's bounds.
fn python_ok(path: &str, text: &str) -> SourceFacts {
    python::read(path, text).expect("within lint's bounds")
}

#[test]
fn file_kinds_are_told_by_name_and_tests_are_not_linted() {
    assert_eq!(FileKind::of("operator.py"), FileKind::Python);
    assert_eq!(FileKind::of("test_operator.py"), FileKind::Other);
    assert_eq!(FileKind::of("conftest.py"), FileKind::Other);
    assert_eq!(FileKind::of("Dockerfile"), FileKind::Dockerfile);
    assert_eq!(FileKind::of("Dockerfile.prod"), FileKind::Dockerfile);
    assert_eq!(FileKind::of("deploy.yml"), FileKind::Yaml);
    assert_eq!(FileKind::of("README.md"), FileKind::Other);
    assert_eq!(FileKind::of("start-operator.sh"), FileKind::Script);
}

#[test]
fn the_image_cmd_starts_kopf_when_the_deployment_sets_no_command() {
    let mut m = Manifests::default();
    m.read(
        "d.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      containers: [{name: op, image: op}]\n",
        "ops",
    );
    let image = dockerfile::read(
        "Dockerfile",
        "FROM python\nCMD [\"kopf\", \"run\", \"-A\", \"--standalone\", \"op.py\"]\n",
    );
    let run = from_image(&m.deployments[0], &[image]).expect("kopf from CMD");
    assert_eq!(run.peering, Peering::Standalone);
    assert!(run.scope.is_cluster_wide());
    match &run.origin {
        RunOrigin::Files(start) => {
            assert!(start.flags_known);
            assert!(start.how.contains("Dockerfile:2"), "{}", start.how);
        }
        other => panic!("origin {other:?}"),
    }
    let other = dockerfile::read("Dockerfile", "FROM nginx\nCMD [\"nginx\"]\n");
    assert!(from_image(&m.deployments[0], &[other]).is_none());
}

#[test]
fn the_startup_settings_make_peering_standalone() {
    let facts = python_ok(
        "op.py",
        "import kopf\n@kopf.on.startup()\ndef c(settings, **_):\n    settings.peering.standalone = True\n",
    );
    let run = crate::model::testing::run(crate::model::kopf_run::Scope::ClusterWide, Peering::Auto);
    assert_eq!(with_settings(run, &facts).peering, Peering::Standalone);
}

#[test]
fn the_startup_settings_make_peering_mandatory_under_its_name() {
    let read = |body: &str| {
        python_ok(
            "op.py",
            &format!("import kopf\n@kopf.on.startup()\ndef c(settings, **_):\n{body}"),
        )
    };
    let auto =
        || crate::model::testing::run(crate::model::kopf_run::Scope::ClusterWide, Peering::Auto);
    let mandatory = read("    settings.peering.mandatory = True\n");
    assert_eq!(
        with_settings(auto(), &mandatory).peering,
        Peering::Named("default".into())
    );
    let named = read("    settings.peering.mandatory = True\n    settings.peering.name = 'ops'\n");
    assert_eq!(
        with_settings(auto(), &named).peering,
        Peering::Named("ops".into())
    );
    let renamed = read("    settings.peering.name = 'ops'\n");
    let from_flag = crate::model::testing::run(
        crate::model::kopf_run::Scope::ClusterWide,
        Peering::Named("cli".into()),
    );
    assert_eq!(
        with_settings(from_flag, &renamed).peering,
        Peering::Named("ops".into())
    );
    // A name alone does not make peering mandatory.
    assert_eq!(with_settings(auto(), &renamed).peering, Peering::Auto);
}

#[test]
fn the_source_storage_settings_reach_the_evidence() {
    let facts = python_ok(
        "op.py",
        "import kopf\n@kopf.on.startup()\ndef c(settings, **_):\n    settings.persistence.progress_storage = kopf.StatusProgressStorage(field='status.kopf')\n",
    );
    let storage = facts.storage();
    assert_eq!(storage.progress, crate::model::source::StorageKind::Status);
    assert_eq!(
        storage.diffbase,
        crate::model::source::StorageKind::Annotations
    );
    assert!(storage.uses_status());
}

#[test]
fn links_are_not_followed_and_files_that_are_not_text_are_noted() {
    let dir = std::env::temp_dir().join(format!("kopf-audit-files-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("app")).expect("dir");
    std::fs::write(dir.join("app/op.py"), "import kopf\n").expect("write");
    std::fs::write(dir.join("app/latin1.py"), b"x = '\xe9'\n").expect("write");
    // A link back to the root: following it would walk for ever.
    std::os::unix::fs::symlink(&dir, dir.join("app/loop")).expect("symlink");
    let linted = read(&FilesInput {
        path: Some(dir.clone()),
        namespace: "ops".into(),
        ..FilesInput::default()
    })
    .expect("reads");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(linted.source.files, 1);
    assert!(
        linted
            .unread
            .iter()
            .any(|u| u.path == "app/latin1.py" && u.why.contains("not UTF-8")),
        "{:?}",
        linted.unread
    );
}

#[test]
fn fifos_are_not_read_and_files_over_a_bound_are_unread() {
    let dir = std::env::temp_dir().join(format!("kopf-audit-bounds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    // Reading a fifo blocks until a writer comes: it is skipped, never opened.
    let fifo = std::ffi::CString::new(dir.join("pipe.py").into_os_string().into_encoded_bytes())
        .expect("a path without NUL");
    // SAFETY: a valid NUL-terminated path; mkfifo only creates the file.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo");
    let big = "x".repeat(usize::try_from(bounds::MAX_PYTHON_BYTES).expect("fits") + 1);
    std::fs::write(dir.join("big.py"), format!("# {big}\n")).expect("write");
    std::fs::write(
        dir.join("deep.py"),
        format!("x = 1{}\n", "+1".repeat(bounds::MAX_PYTHON_DEPTH)),
    )
    .expect("write");
    let linted = read(&FilesInput {
        path: Some(dir.clone()),
        namespace: "ops".into(),
        ..FilesInput::default()
    })
    .expect("reads");
    let _ = std::fs::remove_dir_all(&dir);
    let unread: Vec<(&str, &str)> = linted
        .unread
        .iter()
        .map(|u| (u.path.as_str(), u.why.as_str()))
        .collect();
    assert_eq!(unread.len(), 2, "{unread:?}");
    assert!(
        unread[0].0 == "big.py" && unread[0].1.contains("1024 KiB"),
        "{unread:?}"
    );
    assert!(
        unread[1].0 == "deep.py" && unread[1].1.contains("bound of 1000"),
        "{unread:?}"
    );
}

/// A Deployment named `name` whose container runs `kopf run -A op.py`.
fn kopf_deployment(name: &str) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {name}, namespace: ops}}\nspec:\n  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n    metadata: {{labels: {{app: {name}}}}}\n    spec:\n      containers: [{{name: op, image: op, command: [kopf, run, -A, op.py]}}]\n---\n"
    )
}

#[test]
fn a_note_found_for_each_deployment_is_printed_once() {
    let dir = std::env::temp_dir().join(format!("kopf-audit-notes-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("op.py"),
        "import kopf\n@kopf.on.create('gadgets')\ndef c(**kwargs):\n    pass\n",
    )
    .expect("write");
    let manifests = format!("{}{}", kopf_deployment("one"), kopf_deployment("two"));
    std::fs::write(dir.join("deploy.yaml"), manifests).expect("write");
    let linted = read(&FilesInput {
        path: Some(dir.clone()),
        namespace: "ops".into(),
        ..FilesInput::default()
    })
    .expect("reads");
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(linted.evidence.targets.len(), 2);
    let unknown: Vec<&String> = linted
        .notes
        .iter()
        .filter(|n| n.contains("`gadgets` is neither"))
        .collect();
    assert_eq!(unknown.len(), 1, "{:?}", linted.notes);
}

#[test]
fn dockerfiles_are_found_by_content_within_the_sniffing_bounds() {
    let dir = std::env::temp_dir().join(format!("kopf-audit-sniff-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("component-operator-dockerfile"),
        "# syntax=docker/dockerfile:1\n\nFROM python:3.12\nRUN pip install kopf==1.37.2\nCMD [\"kopf\", \"run\", \"-A\", \"op.py\"]\n",
    )
    .expect("write");
    // A binary without an extension is no Dockerfile, and no unread input either.
    std::fs::write(dir.join("tool"), b"\x7fELF\xff\xfe").expect("write");
    // A file with an extension is not sniffed, whatever it holds.
    std::fs::write(
        dir.join("notes.md"),
        "FROM python\nRUN pip install kopf==1.30\n",
    )
    .expect("write");
    let big = format!(
        "FROM python\nRUN pip install kopf==1.20\n#{}\n",
        "x".repeat(usize::try_from(bounds::MAX_SNIFFED_BYTES).expect("fits"))
    );
    std::fs::write(dir.join("big-dockerfile"), big).expect("write");
    let linted = read(&FilesInput {
        path: Some(dir.clone()),
        namespace: "ops".into(),
        ..FilesInput::default()
    })
    .expect("reads");
    let _ = std::fs::remove_dir_all(&dir);
    let pin = linted.source.kopf.expect("the sniffed Dockerfile's pin");
    assert_eq!(
        pin.location,
        crate::model::source::Location::new("component-operator-dockerfile", 4)
    );
    assert!(linted.unread.is_empty(), "{:?}", linted.unread);
}

#[test]
fn a_lock_file_decides_over_a_caret_requirement() {
    let dir = std::env::temp_dir().join(format!("kopf-audit-lock-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::write(
        dir.join("pyproject.toml"),
        "[tool.poetry.dependencies]\nkopf = \"^1.38.0\"\n",
    )
    .expect("write");
    let lint = || {
        read(&FilesInput {
            path: Some(dir.clone()),
            namespace: "ops".into(),
            ..FilesInput::default()
        })
        .expect("reads")
    };
    let caret = lint().source.kopf.expect("a requirement");
    assert_eq!(caret.range.exact(), None, "a caret is a range");
    std::fs::write(
        dir.join("poetry.lock"),
        "[[package]]\nname = \"kopf\"\nversion = \"1.44.0\"\n",
    )
    .expect("write");
    let locked = lint().source.kopf.expect("a lock");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(locked.locked);
    assert_eq!(locked.shown(), "1.44.0");
    assert_eq!(locked.location.file, "poetry.lock");
}

/// The image's CMD runs a script of the repository whose last line starts kopf (as a
/// reviewer reads it): the Deployment is kopf, with the script's flags; a CMD naming a
/// script that starts something else, or two scripts of that name, is not.
#[test]
fn a_cmd_running_a_script_that_starts_kopf_is_kopf() {
    let mut m = Manifests::default();
    m.read(
        "d.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      containers: [{name: op, image: op}]\n",
        "ops",
    );
    let image = dockerfile::read(
        "Dockerfile",
        "FROM python:3.12\nCOPY . /app\nCMD [\"/app/start-operator.sh\"]\n",
    );
    let scripts = vec![(
        "hack/start-operator.sh".to_string(),
        script::kopf_runs(
            "hack/start-operator.sh",
            "#!/bin/sh\nset -e\nexec kopf run --standalone -A /app/operator.py\n",
        ),
    )];
    let source = SourceFacts::default();
    let images = [image];
    let starts = Starts {
        images: &images,
        scripts: &scripts,
        s2i: &[],
        source: &source,
        imports: &source.import_graph(&[]),
        elsewhere: &BTreeSet::new(),
    };
    let run = from_script(&m.deployments[0], &starts).expect("kopf from the script");
    assert_eq!(run.peering, Peering::Standalone);
    assert!(run.scope.is_cluster_wide());
    match &run.origin {
        RunOrigin::Files(start) => {
            assert!(
                start.how.contains("hack/start-operator.sh:3"),
                "{}",
                start.how
            );
        }
        other => panic!("origin {other:?}"),
    }
    // Two scripts of that name: which one runs is not known.
    let mut twice = scripts.clone();
    twice.push(("other/start-operator.sh".to_string(), scripts[0].1.clone()));
    let starts = Starts {
        scripts: &twice,
        ..starts
    };
    assert!(from_script(&m.deployments[0], &starts).is_none());
    // A script of another name.
    let other = dockerfile::read("Dockerfile", "FROM python\nCMD [\"sh\", \"run-web.sh\"]\n");
    let images = [other];
    let starts = Starts {
        images: &images,
        scripts: &scripts,
        s2i: &[],
        source: &source,
        imports: &source.import_graph(&[]),
        elsewhere: &BTreeSet::new(),
    };
    assert!(from_script(&m.deployments[0], &starts).is_none());
}

/// An image built on a `python-kopf-s2i` builder that runs its run script starts kopf
/// with the options of the `kopf-opt.sh` beside its Containerfile; an image on another
/// base does not.
#[test]
fn an_s2i_kopf_build_runs_kopf_with_its_options_file() {
    let mut m = Manifests::default();
    m.read(
        "d.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      containers: [{name: op, image: op}]\n",
        "team",
    );
    let image = dockerfile::read(
        "manager/Containerfile",
        "FROM quay.io/rhpds/python-kopf-s2i:v1.44\nUSER root\nCOPY . /tmp/src\nUSER 1001\nRUN /usr/libexec/s2i/assemble\nCMD [\"/usr/libexec/s2i/run\"]\n",
    );
    let s2i = vec![
        script::s2i_options("other/kopf-opt.sh", "KOPF_PEERING=other\n"),
        script::s2i_options(
            "manager/kopf-opt.sh",
            "#!/bin/sh\nKOPF_NAMESPACED=true\nKOPF_STANDALONE=true\n",
        ),
    ];
    let source = SourceFacts::default();
    let images = [image];
    let starts = Starts {
        images: &images,
        scripts: &[],
        s2i: &s2i,
        source: &source,
        imports: &source.import_graph(&[]),
        elsewhere: &BTreeSet::new(),
    };
    let run = from_s2i(&m.deployments[0], &starts).expect("kopf from the s2i run script");
    assert_eq!(run.peering, Peering::Standalone);
    assert!(!run.scope.is_cluster_wide());
    match &run.origin {
        RunOrigin::Files(start) => {
            assert!(start.how.contains("manager/kopf-opt.sh"), "{}", start.how);
            assert!(
                start.how.contains("manager/Containerfile:1"),
                "{}",
                start.how
            );
        }
        other => panic!("origin {other:?}"),
    }
    let plain = dockerfile::read(
        "Dockerfile",
        "FROM python:3.12\nCMD [\"/usr/libexec/s2i/run\"]\n",
    );
    let images = [plain];
    let starts = Starts {
        images: &images,
        ..starts
    };
    assert!(from_s2i(&m.deployments[0], &starts).is_none());
}

/// A repository whose Python registers kopf handlers, with one Dockerfile and one
/// Deployment, runs kopf however its base image starts it (the evidence names both);
/// with two Dockerfiles, or no handlers, which image runs kopf is not told.
#[test]
fn handlers_and_the_one_image_built_make_the_only_deployment_kopf() {
    let mut m = Manifests::default();
    m.read(
        "d.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      containers: [{name: op, image: op}]\n",
        "ops",
    );
    let image = || {
        dockerfile::read(
            "build/Dockerfile",
            "FROM registry.example.com/platform/operator-runtime:2\nCOPY . /opt/app\n",
        )
    };
    let source = python_ok(
        "operator/handlers.py",
        "import kopf\n\n@kopf.on.create('widgets')\ndef created(**kwargs):\n    pass\n",
    );
    let images = [image()];
    let starts = Starts {
        images: &images,
        scripts: &[],
        s2i: &[],
        source: &source,
        imports: &source.import_graph(&[]),
        elsewhere: &BTreeSet::new(),
    };
    let run = from_handlers(&m.deployments[0], 1, &starts).expect("kopf, by its handlers");
    assert_eq!(run.scope, crate::model::kopf_run::Scope::Unknown);
    assert!(!run.origin.flags_known());
    match &run.origin {
        RunOrigin::Files(start) => assert!(
            start.how.contains("the image built from build/Dockerfile")
                && start.how.contains("created at operator/handlers.py:3"),
            "{}",
            start.how
        ),
        other => panic!("origin {other:?}"),
    }
    assert!(from_handlers(&m.deployments[0], 2, &starts).is_none());
    let two = [image(), image()];
    let starts_two = Starts {
        images: &two,
        ..starts
    };
    assert!(from_handlers(&m.deployments[0], 1, &starts_two).is_none());
    let none = SourceFacts::default();
    let no_handlers = Starts {
        source: &none,
        ..starts
    };
    assert!(from_handlers(&m.deployments[0], 1, &no_handlers).is_none());
}

/// A CMD script that hands over to another script (`exec ./start-operator.sh`) is
/// followed to the one that starts kopf, up to three scripts deep; a cycle ends the
/// search.
#[test]
fn scripts_handing_over_to_scripts_are_followed_three_deep() {
    let mut m = Manifests::default();
    m.read(
        "d.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op}\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      containers: [{name: op, image: op}]\n",
        "ops",
    );
    let images = [dockerfile::read(
        "Dockerfile",
        "FROM python:3.12\nCOPY . /app\nCMD [\"/app/entrypoint.sh\"]\n",
    )];
    let script = |path: &str, text: &str| (path.to_string(), script::starts(path, text));
    let source = SourceFacts::default();
    let found = |scripts: &[(String, Vec<script::ScriptRun>)]| {
        let starts = Starts {
            images: &images,
            scripts,
            s2i: &[],
            source: &source,
            imports: &source.import_graph(&[]),
            elsewhere: &BTreeSet::new(),
        };
        from_script(&m.deployments[0], &starts)
    };
    let kopf = script(
        "hack/start-operator.sh",
        "#!/bin/sh\necho starting\nexec kopf run --standalone -A /app/operator.py\n",
    );
    let two_deep = [
        script(
            "entrypoint.sh",
            "#!/bin/sh\n. ./env.sh\nexec ./hack/start-operator.sh \"$@\"\n",
        ),
        kopf.clone(),
    ];
    let run = found(&two_deep).expect("kopf, one script on");
    assert_eq!(run.peering, Peering::Standalone);
    match &run.origin {
        RunOrigin::Files(start) => assert!(
            start.how.contains("hack/start-operator.sh:3"),
            "{}",
            start.how
        ),
        other => panic!("origin {other:?}"),
    }
    let three_deep = [
        script("entrypoint.sh", "exec bash ./wrap.sh\n"),
        script("wrap.sh", "exec ./hack/start-operator.sh\n"),
        kopf.clone(),
    ];
    assert!(found(&three_deep).is_some());
    let four_deep = [
        script("entrypoint.sh", "exec ./a.sh\n"),
        script("a.sh", "exec ./b.sh\n"),
        script("b.sh", "exec ./hack/start-operator.sh\n"),
        kopf,
    ];
    assert!(found(&four_deep).is_none());
    let cycle = [
        script("entrypoint.sh", "exec ./a.sh\n"),
        script("a.sh", "exec ./entrypoint.sh\n"),
    ];
    assert!(found(&cycle).is_none());
}

#[test]
fn python_entries_are_the_file_or_module_python_runs() {
    let words = |w: &[&str]| w.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        python_entries(&words(&["python", "-u", "/app/main.py"])),
        [Entry::Path("/app/main.py".into())]
    );
    assert_eq!(
        python_entries(&words(&["/usr/bin/python3", "-m", "op.main"])),
        [Entry::Main("op.main".into())]
    );
    assert!(python_entries(&words(&["/app/start.sh"])).is_empty());
    assert!(python_entries(&words(&["python", "-c", "import op"])).is_empty());
}

#[test]
fn lint_leaves_out_the_python_no_kopf_container_loads() {
    let root = std::env::temp_dir().join(format!("kopf-audit-loaded-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let dir = root.as_path();
    std::fs::create_dir_all(dir.join("old")).expect("mkdir");
    std::fs::write(
        dir.join("deploy.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: op, namespace: ns}\nspec:\n  selector: {matchLabels: {app: op}}\n  template:\n    metadata: {labels: {app: op}}\n    spec:\n      containers:\n      - name: op\n        image: op:1\n        command: [kopf, run, -A, /app/op.py]\n",
    )
    .expect("write");
    std::fs::write(dir.join("op.py"), "import kopf\nimport helpers\n").expect("write");
    std::fs::write(dir.join("helpers.py"), "def f():\n    pass\n").expect("write");
    std::fs::write(
        dir.join("old/op_v1.py"),
        "import kopf\n@kopf.on.create('pods')\ndef c(name):\n    pass\n",
    )
    .expect("write");
    let input = FilesInput {
        path: Some(dir.to_path_buf()),
        namespace: "ns".into(),
        ..FilesInput::default()
    };
    let linted = read(&input).expect("read");
    let _ = std::fs::remove_dir_all(&root);
    assert!(
        linted.source.handlers.is_empty(),
        "{:?}",
        linted.source.handlers
    );
    assert_eq!(linted.source.helpers.len(), 1);
    assert!(
        linted
            .notes
            .iter()
            .any(|n| n.contains("were not checked: old/op_v1.py.")),
        "{:?}",
        linted.notes
    );
}
