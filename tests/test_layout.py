"""The house as WORKSPACE.md draws it: its rooms, the way imports run, and the claims a machine can check.

The import graph is read from the code (every `import` / `from ... import`
of a bert_tf module or a tool, at module level or inside a function) and held
against the layout: the groups of `bert_tf/` stand in an order, and an import
only runs to a group below its own (or within it), with no circle anywhere.

`python -m tests.test_layout [ROOT]` prints the graph's numbers (modules,
imports, circles, imports that run back up, depth, the largest module) for a
checkout, this one by default.
"""

import ast
import fnmatch
import os
import re
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The groups of the house, from the ground up. A module may import its own
# group and the groups below it; siblings on one floor (tokenization and
# modeling; export, pretrained and models) do not import each other.
LAYERS = (
    ("ground", ("bert_tf/__init__.py", "bert_tf/_backend.py", "bert_tf/_lazy.py",
                "bert_tf/errors.py",
                "bert_tf/fileio.py", "bert_tf/item_progress.py", "bert_tf/locks.py",
                "bert_tf/logs.py", "bert_tf/options.py", "bert_tf/tf_stderr.py")),
    ("tokenization", ("bert_tf/tokenization/",)),
    ("modeling", ("bert_tf/modeling/",)),
    ("data", ("bert_tf/data/", "bert_tf/tasks/*/data*")),
    ("releases", ("bert_tf/releases/",)),
    ("training", ("bert_tf/training/",)),
    ("tasks", ("bert_tf/tasks/",)),
    ("export", ("bert_tf/export/", "bert_tf/tasks/*/serving*")),
    ("pretrained", ("bert_tf/pretrained.py",)),
    ("models", ("bert_tf/models.py",)),
    ("runs", ("bert_tf/runs/", "bert_tf/tasks/*/run*")),
    ("tools", ("bert_tf/tools/",)),
    ("clone scripts", ("tools/",)),
)
FLOOR = {"ground": 0, "tokenization": 1, "modeling": 2, "data": 3, "releases": 3, "training": 4, "tasks": 5,
         "export": 6, "pretrained": 6, "models": 6, "runs": 7, "tools": 8, "clone scripts": 9}


def _python_files(root):
    files = []
    for top in ("bert_tf", "tools"):
        for directory, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith(".py"):
                    files.append(os.path.relpath(os.path.join(directory, name), root)
                                 .replace(os.sep, "/"))
    return sorted(files)


def _module_file(root, dotted):
    """The file of a dotted module name (`bert_tf.data.vocab`), or None."""
    base = dotted.replace(".", "/")
    for candidate in (base + ".py", base + "/__init__.py"):
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def imports_of(root, path):
    """The files of this tree that `path` imports (module level and inside functions)."""
    with open(os.path.join(root, path), encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                name = alias.name
                if path.startswith("tools/") and "." not in name:
                    name = "tools." + name  # `import _bootstrap`, beside the tool
                target = _module_file(root, name)
                if target:
                    targets.add(target)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            base = _module_file(root, node.module)
            for alias in node.names:
                # `from bert_tf.data import vocab` names a module; `from
                # bert_tf.modeling.config import BertConfig` a name in one.
                target = _module_file(root, node.module + "." + alias.name) or base
                if target:
                    targets.add(target)
    # A package's lazy public names (PEP 562): `_LAZY = {name: module or (module, attr)}`
    # (the top package's are its shortcuts to every floor, left out).
    for node in (tree.body if path != "bert_tf/__init__.py" else ()):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == "_LAZY"):
            for value in ast.literal_eval(node.value).values():
                target = _module_file(root, value[0] if isinstance(value, tuple) else value)
                if target:
                    targets.add(target)
    targets.discard(path)
    return targets


def import_graph(root=REPO_ROOT):
    """{file: set of files it imports}, over bert_tf/ and tools/."""
    return {path: imports_of(root, path) for path in _python_files(root)}


def circles(graph):
    """The strongly connected components of more than one file (Tarjan), sorted."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = [0]

    def visit(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(10000, sys.getrecursionlimit()))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def depth(graph):
    """The number of levels: 1 + the longest chain of imports (a circle counts as one level)."""
    component_of = {}
    for i, component in enumerate(circles(graph)):
        for node in component:
            component_of[node] = ("circle", i)
    levels = {}

    def level(node):
        key = component_of.get(node, node)
        if key in levels:
            return levels[key]
        members = [n for n in graph if component_of.get(n, n) == key]
        below = [t for n in members for t in graph[n] if component_of.get(t, t) != key]
        levels[key] = 1 + max([level(t) for t in below], default=0)
        return levels[key]

    return max([level(node) for node in graph], default=0)


def group_of(path):
    """The group of a file: a task folder's file by its name's floor (`bert_tf/tasks/*/run*`
    stands with the runs), any other by the folder it is in."""
    for name, prefixes in LAYERS:
        if any("*" in p and fnmatch.fnmatch(path, p) for p in prefixes):
            return name
    for name, prefixes in LAYERS:
        if any(path == p or (p.endswith("/") and path.startswith(p)) for p in prefixes):
            return name
    return None


def back_imports(graph):
    """[(file, imported file)] that run to a higher floor, or across one floor's siblings."""
    bad = []
    for path, targets in sorted(graph.items()):
        here = group_of(path)
        for target in sorted(targets):
            there = group_of(target)
            if there == here:
                continue
            if FLOOR[there] >= FLOOR[here]:
                bad.append((path, target))
    return bad


def library_files_matching(pattern, root=REPO_ROOT):
    """The files of bert_tf/ whose text matches `pattern` (a regex, multi-line), as
    `bert_tf/...` paths: where a one-home test finds a definition."""
    found = []
    for path in _python_files(root):
        if path.startswith("bert_tf/"):
            with open(os.path.join(root, path), encoding="utf-8") as f:
                if re.search(pattern, f.read(), re.M):
                    found.append(path)
    return found


def _lines(root, path):
    with open(os.path.join(root, path), encoding="utf-8") as f:
        return sum(1 for _ in f)


def report(root=REPO_ROOT):
    """The numbers of the closing note: modules, imports, circles, depth, the largest module."""
    graph = import_graph(root)
    library = [p for p in graph if p.startswith("bert_tf/")]
    largest = max(library, key=lambda p: _lines(root, p))
    return {
        "modules": len(graph),
        "imports": sum(len(t) for t in graph.values()),
        "circles": circles(graph),
        "depth": depth(graph),
        "largest": (largest, _lines(root, largest)),
    }


# ----------------------------------------------------------------- the graph


def test_no_import_circle():
    assert circles(import_graph()) == []


def test_every_import_runs_down_the_layers():
    graph = import_graph()
    unplaced = [p for p in graph if group_of(p) is None]
    assert unplaced == [], "modules outside the layout (add them to LAYERS and WORKSPACE.md)"
    assert back_imports(graph) == []


def test_no_import_through_importlib():
    """No import hides from the graph: only the loader of the packages' lazy public names
    (`bert_tf/_lazy.py`; each package's `_LAZY`, read by `imports_of`) uses importlib."""
    offenders = []
    for path in _python_files(REPO_ROOT):
        if path == "bert_tf/_lazy.py":
            continue
        with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
            if re.search(r"\bimport_module\b|\b__import__\b|importlib", f.read()):
                offenders.append(path)
    assert offenders == []


def test_the_graph_is_no_deeper_than_the_floors():
    """The export's chain is the deepest: a clone's script, its tool, the export, its int8
    converter, the kinds of export (the one table of them), a task's serving module, its
    model (one built on another: the multiple-choice task on the classifier's), BertModel,
    three layer modules, the ground two deep (`_backend`, which starts TensorFlow through
    `tf_stderr`'s filter): 14 levels."""
    assert report()["depth"] <= 14


# ----------------------------------------------------------------- WORKSPACE.md


def _workspace_blocks():
    with open(os.path.join(REPO_ROOT, "WORKSPACE.md"), encoding="utf-8") as f:
        return f.read().split("```")[1::2]


def _workspace_floors():
    """{floor: set of paths} from WORKSPACE.md's floors block."""
    block = next(b for b in _workspace_blocks() if b.lstrip().startswith("floor 0"))
    floors, floor = {}, None
    for line in block.splitlines():
        match = re.match(r"^floor (\d+)", line)
        if match:
            floor = int(match.group(1))
        if floor is not None:
            floors.setdefault(floor, set()).update(re.findall(r"(?:bert_tf|tools)/[\w/.*]*", line))
    return floors


def _workspace_entries():
    """[(path, description)] of WORKSPACE.md's repository map, in order.

    An entry is a name at an even indentation (two spaces a level) of under
    24 columns, then two spaces or the end of the line: a folder (`name/`) or
    a file with an extension; deeper lines continue a description.
    """
    block = next(b for b in _workspace_blocks() if b.lstrip().startswith("bert_tf/"))
    entries, stack = [], []
    for line in block.splitlines():
        match = re.match(r"^( *)([\w.-]+/|[\w-]+\.(?:py|sh|md|toml|txt|ini|json))(?:  |$)", line)
        if not match or len(match.group(1)) >= 24 or len(match.group(1)) % 2:
            if entries:
                entries[-1][1].append(line.strip())
            continue
        depth = len(match.group(1)) // 2
        stack = stack[:depth] + [match.group(2)]
        entries.append(("".join(stack), [line[match.end():].strip()]))
    return [(path, " ".join(d for d in description if d)) for path, description in entries]


def _workspace_tree():
    """The paths WORKSPACE.md's repository map names."""
    return [path for path, _ in _workspace_entries()]


def test_the_map_names_every_module_and_nothing_else():
    """WORKSPACE.md's map lists every module of bert_tf/ and tools/, and no file that is not there."""
    named = _workspace_tree()
    # A package's __init__.py goes with its folder's line unless it has a line of its own.
    unlisted = [path for path in _python_files(REPO_ROOT) if path not in named
                and not (path.endswith("/__init__.py") and path[:-len("__init__.py")] in named)]
    absent = [path for path in named if not os.path.exists(os.path.join(REPO_ROOT, path))]
    assert not unlisted, "modules missing from WORKSPACE.md's map: %s" % unlisted
    assert not absent, "WORKSPACE.md's map names files that do not exist: %s" % absent


def test_the_modules_marked_no_tf_load_no_tensorflow():
    """A module the map marks "(no TF)", "(no TF at import)" or "(imports no TensorFlow)"
    imports neither TensorFlow nor Keras (each in a fresh process)."""
    import subprocess
    marked = [path for path, description in _workspace_entries()
              if re.search(r"\(no TF\b|\(no TF at import|\(imports no TensorFlow\)",
                           description) and path.startswith("bert_tf/")]
    assert len(marked) >= 10, marked
    modules = [(p[:-len("/__init__.py")] if p.endswith("/__init__.py") else
                p[:-len(".py")] if p.endswith(".py") else p.rstrip("/")).replace("/", ".")
               for p in marked]
    heavy = {}
    for name in modules:
        proc = subprocess.run(
            [sys.executable, "-c", "import sys, %s; print(' '.join(m for m in ('tensorflow', "
             "'keras') if m in sys.modules))" % name],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True)
        if proc.stdout.strip():
            heavy[name] = proc.stdout.strip()
    assert heavy == {}


def test_every_tool_runs_in_a_test():
    """Each tool of bert_tf/tools/ is run by some test: by its clone script's path
    (`tools/<name>.py`), its module, its `TOOL` or its command (`bert-<name>`)."""
    tests = []
    for directory, _, names in os.walk(os.path.join(REPO_ROOT, "tests")):
        for name in names:
            if name.endswith(".py"):
                with open(os.path.join(directory, name), encoding="utf-8") as f:
                    tests.append(f.read())
    text = "\n".join(tests)
    unrun = []
    for path in tool_modules():
        name = os.path.basename(path)[:-len(".py")]
        ways = ('"%s.py"' % name, "tools/%s.py" % name, "bert_tf.tools.%s" % name,
                "bert-" + name.replace("_", "-"), "%s.TOOL" % name)
        if not any(way in text for way in ways):
            unrun.append(path)
    assert unrun == []


def test_workspace_floors_are_the_layers():
    layers = {}
    for name, prefixes in LAYERS:
        layers.setdefault(FLOOR[name], set()).update(prefixes)
    assert _workspace_floors() == layers


def _module_imports(path):
    """Top-level names of the packages `path` imports at module level (not inside functions)."""
    with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_only_dense_dropout_embeddings_and_initializers_layers_call_tensorflow():
    """WORKSPACE.md: layers use keras.ops; dense.py, dropout.py, embeddings.py and
    initializers.py (LayerNorm's gradient) call TensorFlow, and say why."""
    layers = os.path.join("bert_tf", "modeling", "layers")
    with_tf = sorted(name for name in os.listdir(os.path.join(REPO_ROOT, layers))
                     if name.endswith(".py")
                     and "tensorflow" in _module_imports(os.path.join(layers, name)))
    assert with_tf == ["dense.py", "dropout.py", "embeddings.py", "initializers.py"]


def test_data_modules_that_load_tensorflow_are_the_ones_workspace_names():
    """WORKSPACE.md: of the data floor (bert_tf/data/ and the tasks' data modules), only the
    tf.data modules (and Beam) import TensorFlow."""
    heavy = []
    for path in _python_files(REPO_ROOT):
        if group_of(path) == "data" and _module_imports(path) & {
                "tensorflow", "keras", "tensorflow_text", "apache_beam"}:
            heavy.append(path)
    assert heavy == ["bert_tf/data/finite_input.py", "bert_tf/data/input_pipeline.py",
                     "bert_tf/data/record_checks.py", "bert_tf/tasks/masked_lm/data.py",
                     "bert_tf/tasks/masked_lm/data_masking.py",
                     "bert_tf/tasks/pretraining/data/beam.py"]


def _module_level_bert_tf_imports(path):
    """The bert_tf modules `path` imports at module level (`from bert_tf.tools import cli` ->
    `bert_tf.tools.cli`)."""
    with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names if a.name.split(".")[0] == "bert_tf")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "bert_tf":
            names.update(node.module + "." + a.name for a in node.names)
    return names


# The tools' plumbing: the runner, the flags, the log filter (no TensorFlow, no Keras).
TOOL_PLUMBING = ("bert_tf/tools/__init__.py", "bert_tf/tools/cli.py",
                 "bert_tf/tools/flag_groups.py", "bert_tf/tools/tf_logs.py")


def tool_modules():
    """The modules of bert_tf/tools/ that are tools (not its plumbing)."""
    return sorted(p for p in import_graph() if p.startswith("bert_tf/tools/")
                  and p not in TOOL_PLUMBING)


def test_tools_are_thin():
    """A command is two files: its tool (`bert_tf/tools/<name>.py`: the docstring, the flags
    from flag_groups, one `cli.Tool` naming the library function) and that function. A tool
    imports no other tool, nothing heavy and nothing of the library at module level; a
    clone's script (`tools/<name>.py`) imports `_bootstrap` and its own tool's `main`, nothing
    else; the library reads no flags."""
    graph = import_graph()
    tools = tool_modules()
    assert len(tools) == 16, tools
    for path, targets in graph.items():
        if path.startswith("tools/"):
            if path != "tools/_bootstrap.py":
                tool = "bert_tf/" + path
                assert tool in tools, "%s runs no tool of bert_tf/tools/" % path
                assert targets == {"tools/_bootstrap.py", tool}, (path, targets)
                assert _module_imports(path) == {"bert_tf", "sys"}, path  # `_bootstrap` in a try
                assert _module_level_bert_tf_imports(path) == {
                    tool[:-len(".py")].replace("/", ".") + ".main"}, path
        elif path in tools:
            assert [t for t in targets if t in tools] == [], (path, targets)
            heavy = _module_imports(path) - {"absl", "bert_tf", "json", "sys"}
            assert heavy == set(), (path, heavy)
            assert _module_level_bert_tf_imports(path) <= {
                "bert_tf.tools.cli", "bert_tf.tools.flag_groups",
                "bert_tf.errors.UserError"}, path
        elif not path.startswith("bert_tf/tools/"):
            with open(os.path.join(REPO_ROOT, path), encoding="utf-8") as f:
                assert "absl import flags" not in f.read(), path


def test_every_flag_of_every_tool_reaches_its_library_function():
    """The call is derived from the flags: each flag is an argument of the same name (or a
    field of an option group the function takes), with the same default; every argument
    without a default has its flag; the function is the library's, not the tool's."""
    import importlib
    for path in tool_modules():
        module = importlib.import_module(path[:-len(".py")].replace("/", "."))
        assert module.TOOL.check() == [], (path, module.TOOL.check())
        function = module.TOOL.function()
        assert not function.__module__.startswith("bert_tf.tools"), (path, function.__module__)


def test_importing_the_tools_loads_no_tensorflow():
    """`--help` and a mistake in the flags answer before TensorFlow loads (a tool, its flags,
    the option groups of the library they come from)."""
    import subprocess
    code = ("import sys\n"
            "for name in %r:\n"
            "    __import__(name)\n"
            "heavy = sorted(m for m in ('tensorflow', 'keras', 'tensorflow_text') "
            "if m in sys.modules)\n"
            "print(' '.join(heavy))\n" % ([p[:-3].replace("/", ".") for p in tool_modules()],))
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True,
                          text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "", proc.stdout


if __name__ == "__main__":
    numbers = report(sys.argv[1] if len(sys.argv) > 1 else REPO_ROOT)
    print("modules: %d\nimports: %d\ncircles: %d %s\ndepth: %d levels\nlargest module: %s, %d lines"
          % (numbers["modules"], numbers["imports"], len(numbers["circles"]),
             numbers["circles"], numbers["depth"], numbers["largest"][0],
             numbers["largest"][1]))
    if len(sys.argv) == 1:
        print("imports that run back up: %d" % len(back_imports(import_graph())))
