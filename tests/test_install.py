"""bert_tf as an installed package: the wheel, light imports, the lazy names, the tools' header.

The wheel test builds bert_tf without the network, installs it into a fresh
virtual environment (which sees this environment's TensorFlow through a .pth
file instead of downloading it again) and, from a directory outside the
repository, imports it, runs a tool copied out of `tools/`, asks every console
script of pyproject.toml and every `python -m bert_tf.tools.<name>` for its
--help (the tool's docstring and flags; no TensorFlow is imported for it), and
runs `bert-create-pretraining-data` and `bert-run-classifier` (a tiny model
on a tiny task) as a user of the installed package does.
"""

import ast
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import tomllib
import zipfile

import pytest

import bert_tf

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The modules that tokenize and prepare data: none may import TensorFlow or Keras.
LIGHT_MODULES = (
    "bert_tf", "bert_tf.errors", "bert_tf.tokenization", "bert_tf.modeling.config", "bert_tf.fileio",
    "bert_tf.item_progress", "bert_tf.locks",
    "bert_tf.data", "bert_tf.tasks.pretraining.data", "bert_tf.tasks.pretraining.data.create",
    "bert_tf.data.text_files", "bert_tf.tasks.pretraining.data.tokens",
    "bert_tf.tasks.pretraining.data.instances", "bert_tf.tasks.pretraining.data.records",
    "bert_tf.tasks.pretraining.data.writing", "bert_tf.tasks.pretraining.data.workers",
    "bert_tf.tasks.pretraining.data.rng_plan", "bert_tf.data.vocab",
    "bert_tf.data.demo_corpus", "bert_tf.tasks.classifier.data",
    "bert_tf.tasks.classifier.data_processors",
    "bert_tf.tasks.squad.data", "bert_tf.tasks.squad.data_predictions", "bert_tf.data.squad_windows",
    "bert_tf.tasks.squad.data_evaluate", "bert_tf.tasks.token_classification.data", "bert_tf.tasks.embeddings.data",
    "bert_tf.modeling", "bert_tf.tokenization.full_tokenizer", "bert_tf.tokenization.vocab",
    "bert_tf.tokenization.pair_features", "bert_tf.runs",
    "bert_tf.tasks.pretraining.run_create_data",
)
HEAVY_MODULES = ("tensorflow", "keras", "tensorflow_text")

# The public names `bert_tf` resolves on first access: name -> (module, attribute or None).
LAZY_NAMES = {
    "BertConfig": ("bert_tf.modeling.config", "BertConfig"),
    "BertModel": ("bert_tf.modeling.bert_model", "BertModel"),
    "from_pretrained": ("bert_tf.pretrained", "from_pretrained"),
    "Pretrained": ("bert_tf.pretrained", "Pretrained"),
    "models": ("bert_tf.models", None),
}


def _env(**updates):
    """A child's environment: no PYTHONPATH (the child finds bert_tf on its own), CPU only."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "KERAS_BACKEND", "TF_CONFIG")}
    env.update(TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    env.update(updates)
    return env


def _run(command, cwd, env=None, timeout=300):
    proc = subprocess.run(command, cwd=str(cwd), env=env or _env(), capture_output=True,
                          text=True, timeout=timeout)
    return proc.returncode, proc.stdout, proc.stderr


def _child_json(code, cwd, env=None):
    """Runs `code` with this interpreter, the repository on sys.path; returns its last stdout line as JSON."""
    prelude = "import sys; sys.path.insert(0, %r)\n" % REPO_ROOT
    rc, out, err = _run([sys.executable, "-c", prelude + textwrap.dedent(code)], REPO_ROOT, env)
    assert rc == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


# ------------------------------------------------------------------ light imports


@pytest.mark.slow
def test_light_modules_import_neither_tensorflow_nor_keras(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ncat\n##s\n")
    result = _child_json("""
        import importlib, json, os, sys
        for name in %r:
            importlib.import_module(name)
        from bert_tf.tokenization import FullTokenizer
        tokens = FullTokenizer(%r, do_lower_case=True).tokenize("The cats")
        light = {"loaded": sorted(m for m in %r if m in sys.modules), "tokens": tokens,
                 "KERAS_BACKEND": os.environ.get("KERAS_BACKEND")}
        import bert_tf
        model = bert_tf.BertModel(bert_tf.BertConfig(vocab_size=20, hidden_size=32,
            num_hidden_layers=2, num_attention_heads=4, intermediate_size=37))
        import keras
        out = model(keras.ops.convert_to_tensor([[2, 4, 5, 3]], "int32"))
        print(json.dumps({"light": light, "KERAS_BACKEND": os.environ.get("KERAS_BACKEND"),
                          "backend": keras.config.backend(),
                          "pooled_shape": list(out["pooled_output"].shape)}))
        """ % (LIGHT_MODULES, str(vocab), HEAVY_MODULES), tmp_path)
    assert result["light"]["loaded"] == [], "the light modules imported %s" % result["light"]["loaded"]
    assert result["light"]["tokens"] == ["the", "cat", "##s"]
    # Importing a tokenizer leaves the environment alone; the model side sets the default.
    assert result["light"]["KERAS_BACKEND"] is None
    assert result["KERAS_BACKEND"] == "tensorflow" and result["backend"] == "tensorflow"
    assert result["pooled_shape"] == [1, 32]


def test_model_side_modules_refuse_another_keras_backend(tmp_path):
    result = _child_json("""
        import json, sys
        import bert_tf.tokenization, bert_tf.tasks.pretraining.data
        errors = []
        for attempt in ("import bert_tf.modeling.bert_model", "bert_tf.BertModel"):
            try:
                exec(attempt)
                errors.append(None)
            except ImportError as e:
                errors.append(str(e))
        print(json.dumps({"errors": errors, "keras": "keras" in sys.modules}))
        """, tmp_path, env=_env(KERAS_BACKEND="jax"))
    for error in result["errors"]:
        assert error is not None and "TensorFlow backend" in error and "KERAS_BACKEND='jax'" in error
    assert not result["keras"], "Keras was imported on the wrong backend before the check"


def test_every_keras_module_selects_the_backend_first():
    """A module that imports keras at module level imports bert_tf._backend before keras or tensorflow."""
    offenders = []
    for path in sorted(glob.glob(os.path.join(REPO_ROOT, "bert_tf", "**", "*.py"), recursive=True)):
        relpath = os.path.relpath(path, REPO_ROOT)
        if relpath == os.path.join("bert_tf", "_backend.py"):
            continue
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), relpath)
        seen_backend = False
        imports_keras = False
        first_heavy = None
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == "bert_tf" and any(
                    a.name == "_backend" for a in node.names):
                seen_backend = True
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                top = name.split(".")[0]
                if top in ("keras", "tensorflow") and first_heavy is None and not seen_backend:
                    first_heavy = (node.lineno, name)
                imports_keras |= top == "keras"
        if imports_keras and first_heavy is not None:
            offenders.append("%s:%d imports %s before `from bert_tf import _backend`"
                             % (relpath, first_heavy[0], first_heavy[1]))
    assert not offenders, "\n".join(offenders)


# ------------------------------------------------------------------ lazy names


def test_lazy_names_resolve_and_are_listed():
    import importlib
    listed = dir(bert_tf)
    for name, (module_name, attribute) in LAZY_NAMES.items():
        assert name in listed and name in bert_tf.__all__
        module = importlib.import_module(module_name)
        assert getattr(bert_tf, name) is (module if attribute is None else getattr(module, attribute)), name
    with pytest.raises(AttributeError, match="no attribute 'BertModle'"):
        bert_tf.BertModle  # noqa: B018


# ------------------------------------------------------------------ the tools' header


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_setup_says_what_it_installs_before_pip_runs_quiet(tmp_path):
    """`make demo`'s first minutes are `make setup`'s quiet pip: a line says what they are.
    (Run with `true` for Python and pip: the recipe's lines, nothing installed.)"""
    venv = tmp_path / "venv"
    venv.mkdir()
    # A make of its own (under `make test`, a sub-make would print its directory lines).
    env = {k: v for k, v in os.environ.items() if k not in ("MAKELEVEL", "MAKEFLAGS", "MFLAGS")}
    run = subprocess.run(["make", "--no-print-directory", "-B", "setup", "VENV=%s" % venv,
                          "PY=true", "PYTHON=true"],
                         cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    said = lines.index("setup: installing the pinned requirements into %s (a few minutes the "
                       "first time)" % venv)
    installs = [i for i, line in enumerate(lines) if " -m pip install " in line]
    assert installs and said < installs[0], lines
    assert lines[-1] == "setup: done (%s)" % venv


def test_tools_put_the_repository_on_sys_path_only_in_a_clone(tmp_path):
    # No tool adds a path unconditionally at module level.
    for path in sorted(glob.glob(os.path.join(REPO_ROOT, "tools", "*.py"))):
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in tree.body:
            if isinstance(node, ast.Expr) and re.match(r"sys\.path\.(insert|append)", ast.unparse(node)):
                raise AssertionError("%s:%d: %s" % (path, node.lineno, ast.unparse(node)))
    # In a clone (bert_tf/ next to tools/), the clone's package wins over an installed one.
    clone = tmp_path / "clone"
    (clone / "tools").mkdir(parents=True)
    (clone / "bert_tf").mkdir()
    (clone / "bert_tf" / "__init__.py").write_text("raise ImportError('the clone bert_tf was imported')\n")
    for name in ("create_pretraining_data.py", "_bootstrap.py"):
        shutil.copy(os.path.join(REPO_ROOT, "tools", name), clone / "tools")
    rc, _, err = _run([sys.executable, str(clone / "tools" / "create_pretraining_data.py")], tmp_path)
    assert rc != 0 and "the clone bert_tf was imported" in err, err[-2000:]


# ------------------------------------------------------------------ the wheel


def _requirement_pins():
    """requirements.txt's `name==version` lines, as {name: version}."""
    pins = {}
    with open(os.path.join(REPO_ROOT, "requirements.txt")) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                name, version = line.split("==")
                pins[name.lower()] = version
    return pins


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """bert_tf's wheel, built here and installed into a fresh venv: (wheel path, venv python)."""
    work = tmp_path_factory.mktemp("install")
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(os.path.join(REPO_ROOT, name), source)
    shutil.copytree(os.path.join(REPO_ROOT, "bert_tf"), source / "bert_tf",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    # Building must not import TensorFlow or Keras: here they fail if imported.
    blocked = work / "blocked"
    for name in ("tensorflow", "keras"):
        (blocked / name).mkdir(parents=True)
        (blocked / name / "__init__.py").write_text("raise ImportError('imported while building')\n")
    dist = work / "dist"
    rc, out, err = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                         "--no-index", "-q", "-w", str(dist), str(source)],
                        work, _env(PYTHONPATH=str(blocked)))
    assert rc == 0, out[-2000:] + err[-3000:]
    (wheel,) = glob.glob(str(dist / "*.whl"))

    venv = work / "venv"
    rc, _, err = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], work)
    assert rc == 0, err
    python = str(venv / "bin" / "python")
    site_packages = _run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         work)[1].strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    with open(os.path.join(site_packages, "test_environment.pth"), "w") as f:
        f.write("".join(p + "\n" for p in sorted(ours)))
    rc, out, err = _run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps",
                         "--no-index", "-q", wheel], work)
    assert rc == 0, out[-2000:] + err[-3000:]
    return wheel, python, work


@pytest.mark.slow
def test_wheel_holds_every_subpackage(installed):
    wheel, _, _ = installed
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    expected = {os.path.relpath(p, REPO_ROOT).replace(os.sep, "/")
                for p in glob.glob(os.path.join(REPO_ROOT, "bert_tf", "**", "*.py"), recursive=True)}
    assert expected - names == set()
    assert not [n for n in names if n.startswith(("tests/", "tools/", "bench/"))]


@pytest.mark.slow
def test_installed_package_imports_outside_the_clone(installed):
    _, python, work = installed
    outside = work / "elsewhere"
    outside.mkdir(exist_ok=True)
    rc, out, err = _run([python, "-c", textwrap.dedent("""
        import importlib.metadata, json, sys
        import bert_tf, bert_tf.tokenization, bert_tf.tasks.pretraining.data
        print(json.dumps({
            "file": bert_tf.__file__, "version": bert_tf.__version__,
            "dist_version": importlib.metadata.version("bert_tf"),
            "requires": importlib.metadata.requires("bert_tf"),
            "heavy": [m for m in ("tensorflow", "keras") if m in sys.modules]}))
        """)], outside)
    assert rc == 0, err[-3000:]
    result = json.loads(out.strip().splitlines()[-1])
    venv = os.path.dirname(os.path.dirname(python))
    assert os.path.realpath(result["file"]).startswith(os.path.realpath(venv) + os.sep), result["file"]
    assert result["dist_version"] == result["version"] == bert_tf.__version__
    assert result["heavy"] == []

    # Every runtime dependency is declared, unconditionally, as a range that holds the tested pin.
    from packaging.requirements import Requirement
    runtime = {}
    for line in result["requires"]:
        requirement = Requirement(line)
        if requirement.marker is None:
            runtime[requirement.name.lower()] = requirement.specifier
    pins = _requirement_pins()
    assert sorted(runtime) == sorted(pins)
    for name, version in pins.items():
        assert runtime[name].contains(version), "%s %s excludes the tested %s" % (name, runtime[name], version)
        assert "==" not in str(runtime[name]), "%s is pinned exactly: %s" % (name, runtime[name])


@pytest.mark.slow
def test_installed_package_runs_a_tool_copied_out_of_the_clone(installed):
    _, python, work = installed
    outside = work / "user"
    (outside / "tools").mkdir(parents=True)
    shutil.copy(os.path.join(REPO_ROOT, "tools", "create_pretraining_data.py"), outside / "tools")
    (outside / "vocab.txt").write_text(
        "".join(t + "\n" for t in "[PAD] [UNK] [CLS] [SEP] [MASK] the cat sat on mat a dog ran .".split()))
    (outside / "corpus.txt").write_text(
        "the cat sat on the mat.\na dog ran.\n\nthe dog sat.\nthe cat ran on a mat.\n")
    rc, out, err = _run([python, "tools/create_pretraining_data.py", "--input_file=corpus.txt",
                         "--output_file=out.tfrecord", "--vocab_file=vocab.txt",
                         "--max_seq_length=16", "--max_predictions_per_seq=3", "--dupe_factor=2"],
                        outside)
    assert rc == 0, err[-3000:]
    wrote = re.search(r"Wrote (\d+) total instances", err)
    assert wrote, err[-3000:]
    # TFRecord framing: uint64 length, uint32 crc, data, uint32 crc.
    data = (outside / "out.tfrecord").read_bytes()
    count, offset = 0, 0
    while offset < len(data):
        offset += 8 + 4 + int.from_bytes(data[offset:offset + 8], "little") + 4
        count += 1
    assert offset == len(data) and count == int(wrote.group(1)) > 0


# ------------------------------------------------------------------ the console scripts


def _console_scripts():
    """pyproject.toml's [project.scripts]: {script: tool module}."""
    with open(os.path.join(REPO_ROOT, "pyproject.toml"), "rb") as f:
        scripts = tomllib.load(f)["project"]["scripts"]
    modules = {}
    for script, target in scripts.items():
        module, _, function = target.partition(":")
        assert function == "main", target
        modules[script] = module
    return modules


def _defined_flags(module):
    """The flag names of `module` (a bert_tf.tools module): those its `TOOL` takes."""
    import importlib
    return sorted(flag.name for flag in importlib.import_module(module).TOOL.flags)


def _run_all(commands, cwd):
    """Runs the commands side by side (none imports TensorFlow): [(rc, stdout, stderr)]."""
    procs = [subprocess.Popen(c, cwd=str(cwd), env=_env(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for c in commands]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        results.append((proc.returncode, out, err))
    return results


def test_one_naming_scheme_for_the_console_scripts():
    scripts = _console_scripts()
    assert "bert-run-classifier" in scripts and "bert-create-pretraining-data" in scripts
    for script, module in scripts.items():
        assert module == "bert_tf.tools." + script[len("bert-"):].replace("-", "_"), script
    # Every tool of a clone's tools/ is a console script.
    clone_tools = {os.path.splitext(os.path.basename(p))[0]
                   for p in glob.glob(os.path.join(REPO_ROOT, "tools", "*.py"))} - {"_bootstrap"}
    assert clone_tools <= {m.rpartition(".")[2] for m in scripts.values()}


@pytest.mark.slow
def test_console_scripts_and_python_m_show_the_tools_help(installed):
    """`bert-<tool> --help` (the installed executable) and `python -m bert_tf.tools.<tool>
    --help`: exit 0, the tool's docstring as usage and its own flags."""
    _, python, work = installed
    outside = work / "help"
    outside.mkdir(exist_ok=True)
    scripts = _console_scripts()
    bin_dir = os.path.dirname(python)
    missing = [s for s in scripts if not os.path.isfile(os.path.join(bin_dir, s))]
    assert missing == [], "not installed as commands: %s" % missing
    commands = [[os.path.join(bin_dir, script), "--help"] for script in scripts]
    commands += [[python, "-m", module, "--help"] for module in scripts.values()]
    results = _run_all(commands, outside)
    for command, module, (rc, out, err) in zip(commands, list(scripts.values()) * 2, results):
        shown = " ".join(os.path.basename(c) for c in command)
        assert rc == 0, (shown, err[-3000:])
        with open(os.path.join(REPO_ROOT, *module.split(".")) + ".py", encoding="utf-8") as f:
            docstring = ast.get_docstring(ast.parse(f.read()))
        assert docstring.splitlines()[0] in out, (shown, out[:500])
        own_flags = _defined_flags(module)
        assert own_flags, module
        for name in own_flags:
            assert re.search(r"^  --(\[no\])?%s\b" % re.escape(name), out, re.M), (shown, name)
    run_classifier_help = results[list(scripts).index("bert-run-classifier")][1]
    assert "--bert_config_file" in run_classifier_help
    assert "--distribution_strategy" in run_classifier_help  # the shared scale-out flags too


def _write_tiny_classification_task(directory):
    """An MRPC-layout train.tsv, a vocab of its words, a tiny bert_config.json: the flags."""
    from bert_tf.data import demo_corpus
    from bert_tf.tokenization import BasicTokenizer
    data_dir = os.path.join(str(directory), "MRPC")
    demo_corpus.write_sentence_pair_task(
        data_dir, sizes=(("train.tsv", 16),), max_words=12)
    words = set()
    tokenizer = BasicTokenizer(do_lower_case=True)
    with open(os.path.join(data_dir, "train.tsv"), encoding="utf-8") as f:
        words.update(tokenizer.tokenize(f.read()))
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words)
    with open(os.path.join(str(directory), "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in tokens))
    config = {"vocab_size": len(tokens), "hidden_size": 32, "num_hidden_layers": 2,
              "num_attention_heads": 4, "intermediate_size": 37, "hidden_act": "gelu",
              "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
              "max_position_embeddings": 64, "type_vocab_size": 2, "initializer_range": 0.02}
    with open(os.path.join(str(directory), "bert_config.json"), "w") as f:
        json.dump(config, f)
    return ["--task_name=MRPC", "--data_dir=MRPC", "--vocab_file=vocab.txt",
            "--bert_config_file=bert_config.json", "--max_seq_length=32"]


@pytest.mark.slow
def test_installed_console_scripts_run_outside_the_clone(installed):
    """`bert-create-pretraining-data` and `bert-run-classifier`, from a user's directory."""
    _, python, work = installed
    bin_dir = os.path.dirname(python)
    outside = work / "console_user"
    outside.mkdir(exist_ok=True)
    (outside / "vocab.txt").write_text(
        "".join(t + "\n" for t in "[PAD] [UNK] [CLS] [SEP] [MASK] the cat sat on mat a dog ran .".split()))
    (outside / "corpus.txt").write_text(
        "the cat sat on the mat.\na dog ran.\n\nthe dog sat.\nthe cat ran on a mat.\n")
    rc, _, err = _run([os.path.join(bin_dir, "bert-create-pretraining-data"),
                       "--input_file=corpus.txt", "--output_file=out.tfrecord",
                       "--vocab_file=vocab.txt", "--max_seq_length=16",
                       "--max_predictions_per_seq=3", "--dupe_factor=2"], outside)
    assert rc == 0, err[-3000:]
    wrote = re.search(r"Wrote (\d+) total instances", err)
    assert wrote and int(wrote.group(1)) > 0 and (outside / "out.tfrecord").stat().st_size > 0

    task = outside / "classifier"
    task.mkdir(exist_ok=True)
    flags = _write_tiny_classification_task(task)
    rc, _, err = _run([os.path.join(bin_dir, "bert-run-classifier")] + flags + [
        "--do_train=true", "--train_batch_size=8", "--num_train_epochs=1.0",
        "--output_dir=output"], task)
    assert rc == 0, err[-3000:]
    # int(16 / 8 * 1.0) = 2 steps: the original's records and Google-format checkpoint.
    assert (task / "output" / "train.tf_record").stat().st_size > 0
    with open(task / "output" / "checkpoint") as f:
        assert f.readline().strip() == 'model_checkpoint_path: "model.ckpt-2"'
    assert (task / "output" / "model.ckpt-2.index").is_file()
