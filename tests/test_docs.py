"""The documentation site builds, strictly, and its API reference covers the library.

`mkdocs build --strict` (mkdocs.yml; the pages in docs/) fails on any warning:
a link to a page or an #anchor that does not exist, a page left out of the
nav, or a module that the API reference names (`::: bert_tf.x.y`) but the
code no longer has. The reference is read from the source (griffe), so the
build imports neither TensorFlow nor Keras, and it needs no network.
"""

import glob
import os
import re
import subprocess
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The groups whose every module the reference lists; of bert_tf/data/, the modules
# at its top (bert_tf.tasks.pretraining.data, a module per job, is listed as a package
# with its entry point and its Beam driver).
WHOLE_GROUPS = ("modeling", "tokenization", "training", "tasks", "export")


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path):
    site = tmp_path / "site"
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file",
         os.path.join(REPO_ROOT, "mkdocs.yml"), "--site-dir", str(site)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=600, check=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, "mkdocs build --strict failed:\n" + output
    assert (site / "index.html").is_file(), output
    assert (site / "reference" / "modeling" / "index.html").is_file(), output
    # The reference is rendered from the docstrings, not left as `::: name` lines.
    with open(site / "reference" / "bert_tf" / "index.html", encoding="utf-8") as f:
        page = f.read()
    assert "from_pretrained" in page and ":::" not in page


def _referenced_modules():
    names = set()
    for page in glob.glob(os.path.join(REPO_ROOT, "docs", "reference", "*.md")):
        with open(page, encoding="utf-8") as f:
            names.update(re.findall(r"^::: ([\w.]+)\s*$", f.read(), flags=re.M))
    return names


def _modules(directory, recursive=True):
    """Dotted names of the public modules under bert_tf/<directory>."""
    base = os.path.join(REPO_ROOT, "bert_tf", directory)
    pattern = os.path.join(base, "**", "*.py") if recursive else os.path.join(base, "*.py")
    names = []
    for path in glob.glob(pattern, recursive=recursive):
        rel = os.path.relpath(path, REPO_ROOT)[:-len(".py")].replace(os.sep, ".")
        if rel.endswith(".__init__"):
            rel = rel[:-len(".__init__")]
        if not any(part.startswith("_") for part in rel.split(".")):
            names.append(rel)
    return sorted(names)


def test_the_api_reference_lists_the_public_modules():
    referenced = _referenced_modules()
    expected = {"bert_tf", "bert_tf.pretrained", "bert_tf.models", "bert_tf.data",
                "bert_tf.tasks.pretraining.data", "bert_tf.tasks.pretraining.data.create"}
    for group in WHOLE_GROUPS:
        # A task folder's runs are its tool's call, as bert_tf/runs/ (the tools' --help).
        # create_pretraining_data's package is listed at its top and its entry points.
        expected.update(m for m in _modules(group)
                        if not re.match(r"bert_tf\.tasks\.\w+\.run", m)
                        and not m.startswith("bert_tf.tasks.pretraining.data."))
    expected.update(_modules("data", recursive=False))
    missing = sorted(expected - referenced)
    assert not missing, "modules missing from docs/reference/*.md: %s" % missing


def _anchors(path):
    """The #anchors of a Markdown file's headings, as MkDocs (and GitHub) make them."""
    from markdown.extensions.toc import slugify

    anchors, fenced = set(), False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fenced = not fenced
            elif not fenced and re.match(r"#{1,6} ", line):
                anchors.add(slugify(line.lstrip("#").strip().replace("`", ""), "-"))
    return anchors


def test_the_readme_links_resolve():
    """README.md is not part of the site: its links into docs/ are checked here."""
    with open(os.path.join(REPO_ROOT, "README.md"), encoding="utf-8") as f:
        links = re.findall(r"\]\(([^)\s]+)\)", f.read())
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert local, "README.md links to no page of docs/"
    for link in local:
        path, _, anchor = link.partition("#")
        target = os.path.join(REPO_ROOT, path)
        assert os.path.isfile(target), "README.md links to %s, which does not exist" % link
        if anchor:
            assert anchor in _anchors(target), "README.md links to %s: no such heading" % link


def test_the_site_output_is_git_ignored():
    with open(os.path.join(REPO_ROOT, ".gitignore"), encoding="utf-8") as f:
        assert "/site/" in f.read().split()


def _defined_names(path):
    import ast
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    return {node.name for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def test_every_test_a_page_names_exists():
    """A claim's proof, `tests/<file>.py` or `tests/<file>.py::test_name` (and `::other` after
    it), in README.md, WORKSPACE.md, CHANGELOG.md, BENCHMARKS.md or docs/, names a test file
    and test that are there."""
    pages = ["README.md", "WORKSPACE.md", "CHANGELOG.md", "BENCHMARKS.md"] + sorted(
        os.path.relpath(p, REPO_ROOT)
        for p in glob.glob(os.path.join(REPO_ROOT, "docs", "**", "*.md"), recursive=True))
    reference = re.compile(r"`(tests/[\w/]+\.py)((?:::[\w\[\]\-.,]+)?)`((?:,\s*`::[\w\[\]]+`)*)")
    missing, found = [], 0
    for page in pages:
        with open(os.path.join(REPO_ROOT, page), encoding="utf-8") as f:
            text = f.read()
        for match in reference.finditer(text):
            found += 1
            path = os.path.join(REPO_ROOT, match.group(1))
            if not os.path.isfile(path):
                missing.append((page, match.group(1)))
                continue
            names = [match.group(2)] + re.findall(r"`(::[\w\[\]]+)`", match.group(3) or "")
            defined = _defined_names(path)
            missing += [(page, match.group(1) + name) for name in names
                        if name and name[2:].split("[")[0] not in defined]
    assert found > 50, found
    assert missing == []
