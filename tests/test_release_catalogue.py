"""bert_tf.releases: the table of Google's releases, and what a name resolves to.

The table against configs/ (every released bert_config.json) and the
original's casing check, the releases' URLs, and names that are no release.
Downloading: tests/test_releases.py.
"""

import glob
import json
import os

import pytest

from bert_tf import releases
from bert_tf.errors import UserError

NAME = "uncased_L-2_H-128_A-2"
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_table_is_every_released_config_and_casing():
    from bert_tf.pretrained import infer_do_lower_case
    from bert_tf.tokenization import validate_case_matches_checkpoint

    names = sorted(os.path.basename(p)[:-len(".json")]
                   for p in glob.glob(os.path.join(REPO_ROOT, "configs", "*.json")))
    assert sorted(releases.RELEASES) == names
    for name in names:
        with open(os.path.join(REPO_ROOT, "configs", name + ".json")) as f:
            released = json.load(f)
        release = releases.RELEASES[name]
        assert dict(release.config) == {k: released[k] for k in release.config}, name
        prefix = "/models/%s/bert_model.ckpt" % name
        assert infer_do_lower_case(prefix) == release.do_lower_case, name
        validate_case_matches_checkpoint(release.do_lower_case, prefix)  # the original agrees
    assert sum(r.date == "2020_02_20" for r in releases.RELEASES.values()) == 23


def test_urls_are_googles_and_the_base_is_overridable(monkeypatch):
    monkeypatch.delenv(releases.URL_ENV, raising=False)
    assert (releases.RELEASES["uncased_L-12_H-768_A-12"].url()
            == "https://storage.googleapis.com/bert_models/2018_10_18/uncased_L-12_H-768_A-12.zip")
    assert (releases.RELEASES["wwm_cased_L-24_H-1024_A-16"].url()
            == "https://storage.googleapis.com/bert_models/2019_05_30/wwm_cased_L-24_H-1024_A-16.zip")
    assert (releases.RELEASES["uncased_L-4_H-256_A-4"].url()
            == "https://storage.googleapis.com/bert_models/2020_02_20/uncased_L-4_H-256_A-4.zip")
    monkeypatch.setenv(releases.URL_ENV, "http://mirror.example/bert/")
    assert (releases.RELEASES["chinese_L-12_H-768_A-12"].url()
            == "http://mirror.example/bert/2018_11_03/chinese_L-12_H-768_A-12.zip")


def test_names_that_are_no_release(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=r"^--init_checkpoint=uncased_L-12_H-768_A12: no such "
                                        r"file or directory, and not a released model's name "
                                        r"\(did you mean uncased_L-12_H-768_A-12"):
        releases.resolve_file("uncased_L-12_H-768_A12", "init_checkpoint")
    with pytest.raises(UserError, match=r"^bert-base-uncased: not a released BERT model"):
        releases.download_release("bert-base-uncased")
    # A Hugging Face Hub id: what it is not, the releases, how a Hugging Face model is read.
    with pytest.raises(UserError) as e:
        releases.resolve_file("bert-base-uncased", "init_checkpoint")
    assert str(e.value) == (
        "--init_checkpoint=bert-base-uncased: not a directory, not a checkpoint prefix (no "
        "bert-base-uncased.index) and not the name of one of Google's releases (%s); a Hugging "
        "Face model is read from a directory of its files (config.json, model.safetensors, "
        "vocab.txt): pass its path, e.g. the one huggingface_hub.snapshot_download("
        "'bert-base-uncased') returns" % releases.release_names())
    assert releases.resolve_file("model.ckpt-5", "init_checkpoint") == "model.ckpt-5"
    # Paths are the user's, existing or not (their own errors come later).
    assert releases.resolve_file("no/such/bert_config.json", "bert_config_file") == \
        "no/such/bert_config.json"
    assert releases.resolve_file(None, "init_checkpoint") is None
    (tmp_path / NAME).mkdir()  # a local directory of a release's name wins
    assert releases.resolve(NAME) == NAME


def test_the_downloads_names_are_importable_from_the_package():
    """`bert_tf.releases.<name>` is the object of the download module that holds it."""
    from bert_tf.releases import download
    for name in ("release_files_present", "verify_release_dir", "get_cache_dir", "is_offline",
                 "fetch_release", "CACHE_ENV", "OFFLINE_ENV", "DEFAULT_CACHE", "CONFIG_NAME",
                 "VOCAB_NAME", "CHECKPOINT_NAME"):
        assert getattr(releases, name) is getattr(download, name), name
