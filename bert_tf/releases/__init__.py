"""Google's released BERT models by name: downloaded once, verified, then read from a cache.

`bert_tf.from_pretrained("uncased_L-12_H-768_A-12")` and the tools'
`--init_checkpoint`, `--bert_config_file` and `--vocab_file` take the name of
a release (every zip of Google's README: `RELEASES`) wherever no local path of
that name exists. The first use downloads

  $BERT_TF_RELEASES_URL/<date>/<name>.zip   (default https://storage.googleapis.com/bert_models)

into the cache (`$BERT_TF_CACHE`, default `~/.cache/bert_tf`), as
`<cache>/<name>/` holding `bert_config.json`, `vocab.txt` and
`bert_model.ckpt.*`, the files of the zip, whether the zip has them under a
`<name>/` directory (the 2018 and 2019 releases) or at its top (the 2020
small models). A release named on the command line is
`<cache>/<name>/bert_model.ckpt` (`--init_checkpoint`),
`<cache>/<name>/bert_config.json` (`--bert_config_file`) or
`<cache>/<name>/vocab.txt` (`--vocab_file`); the original's casing check
(`validate_case_matches_checkpoint`) reads the release's name from that path
as it does from a release directory of the user's.

Here: the catalogue, `RELEASES` (name -> `Release`: date, casing, the 11
keys of its `bert_config.json`), and what a name resolves to (`resolve`,
`resolve_file`, `download_release`). The download itself (progress lines,
HTTP Range resume, one process at a time, every member's CRC, the files, the
config, the vocab and the strict checkpoint check before the entry appears)
is `bert_tf.releases.download`, whose public names are importable from here
too.

`BERT_TF_OFFLINE=1` (or `offline=True`) never downloads: a release not in the
cache is a one-line error naming it. Every failure (no network, an HTTP
error, a download cut short, a damaged zip, a full disk, a name that is
neither a path nor a release) is one line, a `UserError`.

This package imports no TensorFlow; verifying a download loads it.
"""

import collections
import difflib
import os
import re

from bert_tf import fileio
from bert_tf.errors import UserError
# The download's names, where users import them from.
from bert_tf.releases.download import CACHE_ENV  # noqa: F401
from bert_tf.releases.download import CHECKPOINT_NAME
from bert_tf.releases.download import CONFIG_NAME
from bert_tf.releases.download import DEFAULT_CACHE  # noqa: F401
from bert_tf.releases.download import OFFLINE_ENV  # noqa: F401
from bert_tf.releases.download import VOCAB_NAME
from bert_tf.releases.download import fetch_release
from bert_tf.releases.download import get_cache_dir  # noqa: F401
from bert_tf.releases.download import is_offline  # noqa: F401
from bert_tf.releases.download import release_files_present  # noqa: F401
from bert_tf.releases.download import verify_release_dir  # noqa: F401

URL_ENV = "BERT_TF_RELEASES_URL"
DEFAULT_URL = "https://storage.googleapis.com/bert_models"

# The file of a release that each of the tools' model flags names.
FILE_OF_FLAG = {
    "init_checkpoint": CHECKPOINT_NAME,
    "bert_config_file": CONFIG_NAME,
    "vocab_file": VOCAB_NAME,
}


class Release(collections.namedtuple("Release", ["name", "date", "do_lower_case", "config"])):
    """One of Google's released models.

    Attributes:
      name: the zip's and directory's name, `uncased_L-12_H-768_A-12`.
      date: the directory of the URL, `2018_10_18`.
      do_lower_case: the tokenizer's casing it was trained with (uncased and
        Chinese: True; cased: False).
      config: {key: value} of the 11 keys of its `bert_config.json`.
    """

    __slots__ = ()

    def url(self, base_url=None):
        """`<base>/<date>/<name>.zip`; base: `base_url`, `$BERT_TF_RELEASES_URL` or Google's."""
        base = base_url or os.environ.get(URL_ENV) or DEFAULT_URL
        return "%s/%s/%s.zip" % (base.rstrip("/"), self.date, self.name)


def _release(name, date, vocab_size):
    """The release `name`: its architecture from the name (L layers, H hidden, A heads)."""
    layers, hidden, heads = (int(n) for n in
                             re.search(r"L-(\d+)_H-(\d+)_A-(\d+)$", name).groups())
    config = collections.OrderedDict([
        ("vocab_size", vocab_size),
        ("hidden_size", hidden),
        ("num_hidden_layers", layers),
        ("num_attention_heads", heads),
        ("intermediate_size", 4 * hidden),
        ("hidden_act", "gelu"),
        ("hidden_dropout_prob", 0.1),
        ("attention_probs_dropout_prob", 0.1),
        ("max_position_embeddings", 512),
        ("type_vocab_size", 2),
        ("initializer_range", 0.02),
    ])
    # As the original's casing check: the cased models keep case, the rest
    # (uncased, the multilingual uncased, Chinese) lower-case.
    do_lower_case = "cased" not in name.split("_")
    return Release(name, date, do_lower_case, config)


_ENGLISH_VOCAB, _CASED_VOCAB = 30522, 28996
# Google's README (the 2020 small models: 2..12 layers x 128..768 hidden, A = H/64;
# their 12/768 is the 2018 BERT-Base's name, which stays the 2018 release).
RELEASES = collections.OrderedDict((r.name, r) for r in [
    _release("uncased_L-12_H-768_A-12", "2018_10_18", _ENGLISH_VOCAB),
    _release("uncased_L-24_H-1024_A-16", "2018_10_18", _ENGLISH_VOCAB),
    _release("cased_L-12_H-768_A-12", "2018_10_18", _CASED_VOCAB),
    _release("cased_L-24_H-1024_A-16", "2018_10_18", _CASED_VOCAB),
    _release("multilingual_L-12_H-768_A-12", "2018_11_03", 105879),
    _release("chinese_L-12_H-768_A-12", "2018_11_03", 21128),
    _release("multi_cased_L-12_H-768_A-12", "2018_11_23", 119547),
    _release("wwm_uncased_L-24_H-1024_A-16", "2019_05_30", _ENGLISH_VOCAB),
    _release("wwm_cased_L-24_H-1024_A-16", "2019_05_30", _CASED_VOCAB),
] + [
    _release("uncased_L-%d_H-%d_A-%d" % (layers, hidden, hidden // 64), "2020_02_20",
             _ENGLISH_VOCAB)
    for layers in (2, 4, 6, 8, 10, 12) for hidden in (128, 256, 512, 768)
    if (layers, hidden) != (12, 768)
])


# ----------------------------------------------------------------- names and places


def close_names(name, count=3):
    """The release names closest to `name` (difflib), at most `count`."""
    return difflib.get_close_matches(name, list(RELEASES), n=count, cutoff=0.6)


def release_names():
    """Every release's name in one line: the 2018-2019 ones, then the 2020 small models' pattern."""
    small = [r for r in RELEASES.values() if r.date == "2020_02_20"]
    named = [r.name for r in RELEASES.values() if r not in small]
    layers = sorted({r.config["num_hidden_layers"] for r in small})
    hidden = sorted({r.config["hidden_size"] for r in small})
    heads = sorted({r.config["num_attention_heads"] for r in small})
    return "%s and uncased_L-{%s}_H-{%s}_A-{%s} (A = H/64)" % (
        ", ".join(named), ",".join(map(str, layers)), ",".join(map(str, hidden)),
        ",".join(map(str, heads)))


def get_release(name):
    """The `Release` called `name`; a one-line `UserError` with the closest names otherwise."""
    if name in RELEASES:
        return RELEASES[name]
    close = close_names(name)
    raise UserError("%s: not a released BERT model%s" % (
        name, " (did you mean %s?)" % ", ".join(close) if close else
        " (the releases: %s)" % release_names()))


def _subject(value, flag):
    return "--%s=%s" % (flag, value) if flag else value


def is_local(value):
    """Whether `value` names something here: a path, a checkpoint prefix, a remote path."""
    return (fileio.is_remote(value) or os.path.exists(value)
            or os.path.exists(value + ".index"))


# A Hugging Face Hub model id: `bert-base-uncased`, `google-bert/bert-base-uncased`.
_HUB_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


def _hub_id_like(value):
    """Whether `value` reads as a Hub model id rather than a path (`model.ckpt-5` does not)."""
    return bool(_HUB_ID_RE.match(value)) and ".ckpt" not in value


def nowhere_error(value, flag=None):
    """The error for a model path that names nothing here and no release.

    It says what `value` is not (a directory, a checkpoint prefix, a
    release's name), lists the releases and how a Hugging Face model is read:
    from a directory of its files (a Hub id such as `bert-base-uncased` is
    never downloaded).
    """
    hub = (", e.g. the one huggingface_hub.snapshot_download(%r) returns" % value
           if _hub_id_like(value) else "")
    return UserError(
        "%s: not a directory, not a checkpoint prefix (no %s.index) and not the name of one of "
        "Google's releases (%s); a Hugging Face model is read from a directory of its files "
        "(config.json, model.safetensors, vocab.txt): pass its path%s"
        % (_subject(value, flag), value.rstrip("/") or value, release_names(), hub))


def resolve(name_or_path, cache_dir=None, offline=None, flag=None):
    """A release's cache directory for its name; any other value unchanged.

    Args:
      name_or_path: a path (returned as it is when anything of that name is
        here: a file, a directory, a checkpoint prefix, a `gs://` path) or a
        release's name (downloaded and verified on first use).
      cache_dir, offline: as `download_release`.
      flag: the flag named in errors (None: the value alone).

    Returns:
      str: `<cache>/<name>` for a release name with nothing of that name here,
      else `name_or_path` (None stays None).

    Raises:
      UserError: what `download_release` raises; a bare name that is no path
        and no release but close to one (naming the closest releases); for
        `flag="init_checkpoint"`, a name shaped as a Hugging Face Hub id
        (`bert-base-uncased`) that is no path here (`nowhere_error`).
    """
    if name_or_path is None:
        return None
    value = os.fspath(name_or_path)
    if not value or is_local(value):
        return value
    if value in RELEASES:
        return download_release(value, cache_dir=cache_dir, offline=offline)
    close = close_names(value)
    if close and "/" not in value and os.sep not in value:
        raise UserError("%s: no such file or directory, and not a released model's name "
                        "(did you mean %s?)" % (_subject(value, flag), ", ".join(close)))
    if flag == "init_checkpoint" and _hub_id_like(value):
        raise nowhere_error(value, flag)
    return value


def resolve_file(value, flag, cache_dir=None, offline=None):
    """The local file a model flag names: a release's name gives its file in the cache.

    Args:
      value: the flag's value (a path, a release's name, or None).
      flag: "init_checkpoint" (`<cache>/<name>/bert_model.ckpt`),
        "bert_config_file" (`.../bert_config.json`) or "vocab_file"
        (`.../vocab.txt`).
      cache_dir, offline: as `download_release`.

    Returns:
      str, or `value` itself when it is a path or empty.
    """
    resolved = resolve(value, cache_dir=cache_dir, offline=offline, flag=flag)
    if resolved is None or resolved == os.fspath(value):
        return resolved
    return os.path.join(resolved, FILE_OF_FLAG[flag])


def download_release(name, cache_dir=None, offline=None, progress=True):
    """The cache directory of release `name`, downloaded and verified if it is not there yet.

    `name` is a key of `RELEASES` (`uncased_L-12_H-768_A-12`); the rest, the
    result (`<cache>/<name>`) and the errors are `download.fetch_release`'s,
    besides a one-line `UserError` for a name that is no release.
    """
    return fetch_release(get_release(name), cache_dir=cache_dir, offline=offline,
                         progress=progress)
