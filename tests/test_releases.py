"""bert_tf.releases.download: Google's released models fetched from a local HTTP server (never the internet).

The server on 127.0.0.1 serves archives built as Google builds them: a zip of
`bert_config.json`, `vocab.txt` and `bert_model.ckpt.*` (under `<name>/` as
the 2018 releases, or at the top as the 2020 small models), the checkpoint
written by bert_tf's own `save_checkpoint` with the architecture of the real
release `uncased_L-2_H-128_A-2` (its word embeddings zero, so the zip is small).
An incomplete cache entry is no hit; no download, failed or not, leaves its
lock file behind; the offline and no-network errors say how to use a copy of
one's own.
The table of releases and what a name resolves to: tests/test_release_catalogue.py.
"""

import glob
import http.server
import io
import json
import multiprocessing
import os
import re
import subprocess
import sys
import threading
import time
import zipfile

import numpy as np
import pytest

from bert_tf import item_progress
from bert_tf import releases
from bert_tf.releases import download
from bert_tf.errors import UserError

NAME = "uncased_L-2_H-128_A-2"
URL_PATH = "/2020_02_20/%s.zip" % NAME
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "hello", "world",
         ",", ".", "!", "##s", "##ing"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS


# ----------------------------------------------------------------- a loopback release server


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        server = self.server
        with server.mutex:
            server.requests.append((self.path, self.headers.get("Range")))
            status = server.status.get(self.path)
            cut = server.cut.pop(self.path, None)
        if status is not None:
            body = b"error"
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        data = server.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        start = 0
        match = re.match(r"^bytes=(\d+)-$", self.headers.get("Range") or "")
        if match and int(match.group(1)) < len(data):
            start = int(match.group(1))
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1,
                                                                  len(data)))
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        if server.delay:
            time.sleep(server.delay)
        if cut is not None:  # the promised length, then the connection drops
            self.wfile.write(body[:cut])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


class ReleaseServer(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.files = {}       # URL path -> bytes
        self.status = {}      # URL path -> an HTTP error status to answer
        self.cut = {}         # URL path -> bytes sent before the connection drops (once)
        self.delay = 0.0      # seconds before a body is sent
        self.requests = []    # (path, Range header)
        self.mutex = threading.Lock()
        self.thread = threading.Thread(target=self.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.server_address[1]

    def stop(self):
        self.shutdown()
        self.server_close()


@pytest.fixture
def server(monkeypatch, tmp_path):
    srv = ReleaseServer()
    monkeypatch.setenv(releases.URL_ENV, srv.url)
    monkeypatch.setenv(releases.CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(releases.OFFLINE_ENV, raising=False)
    yield srv
    srv.stop()


# ----------------------------------------------------------------- archives as Google builds them


@pytest.fixture(scope="module")
def release_files(tmp_path_factory):
    """{file name: bytes} of a valid `uncased_L-2_H-128_A-2` (its real architecture)."""
    from bert_tf.modeling import checkpoint
    from bert_tf.modeling.config import BertConfig
    from bert_tf.tasks.pretraining.model import BertPretrainer

    config = BertConfig.from_dict(dict(releases.RELEASES[NAME].config))
    model = BertPretrainer(config)
    for variable in model.weights:
        if checkpoint.tf1_name(variable) == "bert/embeddings/word_embeddings":
            rng = np.random.RandomState(0)
            value = np.zeros(variable.shape, np.float32)
            value[:len(VOCAB)] = rng.normal(0, 0.02, (len(VOCAB), variable.shape[1]))
            variable.assign(value)
    directory = tmp_path_factory.mktemp("release")
    checkpoint.save_checkpoint(model, str(directory / "bert_model.ckpt"), update_state=False)
    config.to_json_file(str(directory / "bert_config.json"))
    # A token a row, as Google's vocabs: the rows past the words are [unusedN].
    tokens = VOCAB + ["[unused%d]" % i for i in range(config.vocab_size - len(VOCAB))]
    (directory / "vocab.txt").write_text("\n".join(tokens) + "\n")
    return {name: (directory / name).read_bytes() for name in sorted(os.listdir(directory))}


def make_zip(files, top=NAME + "/"):
    """A zip of `files` under `top` (Google's 2018 layout) or at the top (`top=""`)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        if top:
            zf.writestr(top, b"")
        for name, data in files.items():
            # vocab.txt stored, so that a test can damage its bytes and nothing else
            zf.writestr(top + name, data, zipfile.ZIP_STORED if name == "vocab.txt"
                        else zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def entry(tmp_path):
    return str(tmp_path / "cache" / NAME)


def assert_nothing_cached(tmp_path):
    cache = tmp_path / "cache"
    assert not os.path.exists(entry(tmp_path))
    assert glob.glob(str(cache / (".%s.tmp-*" % NAME))) == []
    assert not (cache / (NAME + ".lock")).exists()


def names_the_copy_route(message, tmp_path):
    """Whether an error says how to use a copy the user has: its directory, or the cache entry."""
    return ("pass its directory (to a tool, its files) instead of the name, or put its files "
            "in %s" % entry(tmp_path)) in message


# ----------------------------------------------------------------- download, verify, load


def test_the_download_code_imports_no_tensorflow():
    code = ("import sys; import bert_tf.releases, bert_tf.releases.download; "
            "assert 'tensorflow' not in sys.modules and 'keras' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


def test_from_pretrained_by_name_downloads_verifies_and_loads(server, tmp_path, release_files,
                                                              info_logs):
    import bert_tf
    from bert_tf.modeling import checkpoint

    server.files[URL_PATH] = make_zip(release_files, top="")  # the 2020 layout
    config, model, tokenizer = bert_tf.from_pretrained(NAME)

    assert sorted(os.listdir(entry(tmp_path))) == sorted(release_files)
    assert os.listdir(tmp_path / "cache") == [NAME]  # no lock file, archive or part left
    assert config.num_hidden_layers == 2 and config.hidden_size == 128
    assert tokenizer.basic_tokenizer.do_lower_case is True
    assert tokenizer.tokenize("Hello, World!") == ["hello", ",", "world", "!"]
    saved = checkpoint.read_checkpoint(os.path.join(entry(tmp_path), "bert_model.ckpt"))
    weights = {checkpoint.tf1_name(v): v.numpy() for v in model.weights}
    for name in ("bert/embeddings/word_embeddings", "bert/encoder/layer_1/output/dense/kernel"):
        np.testing.assert_array_equal(weights[name], saved[name])
    lines = [r.getMessage() for r in info_logs.records]
    assert any(re.match(r"^%s\.zip: [\d.]+/[\d.]+ MB, [\d.]+ MB/s, elapsed \d+s, done$"
                        % NAME, line) for line in lines), lines
    assert any("verified and cached in %s" % entry(tmp_path) in line for line in lines)

    # A second use is the cache's, with no request.
    server.requests.clear()
    assert bert_tf.from_pretrained(NAME).config.to_dict() == config.to_dict()
    assert server.requests == []


def test_the_2018_layout_and_progress_lines_with_an_eta(server, tmp_path, release_files,
                                                        monkeypatch, info_logs):
    server.files[URL_PATH] = make_zip(release_files)  # under uncased_L-2_H-128_A-2/
    monkeypatch.setattr(item_progress, "PROGRESS_SECONDS", 0.0)
    monkeypatch.setattr(download, "_CHUNK_BYTES", 4096)
    assert releases.download_release(NAME) == entry(tmp_path)
    assert sorted(os.listdir(entry(tmp_path))) == sorted(release_files)
    lines = [r.getMessage() for r in info_logs.records]
    assert any(re.match(r"^%s\.zip: [\d.]+/[\d.]+ MB, [\d.]+ MB/s, elapsed \d+s, ETA \S+$"
                        % NAME, line) for line in lines), lines


def test_a_cut_download_is_resumed_with_a_range_request(server, tmp_path, release_files):
    archive = make_zip(release_files)
    server.files[URL_PATH] = archive
    half = len(archive) // 2
    server.cut[URL_PATH] = half
    with pytest.raises(UserError, match=r"cut short .* run again to resume") as e:
        releases.download_release(NAME, progress=False)
    assert "\n" not in str(e.value)
    part = tmp_path / "cache" / (NAME + ".zip.part")
    assert part.stat().st_size == half
    assert_nothing_cached(tmp_path)

    assert releases.download_release(NAME, progress=False) == entry(tmp_path)
    assert server.requests[-1] == (URL_PATH, "bytes=%d-" % half)
    assert not part.exists() and not (tmp_path / "cache" / (NAME + ".zip")).exists()
    assert releases.release_files_present(entry(tmp_path))


def test_a_damaged_archive_is_refused_and_nothing_is_cached(server, tmp_path, release_files):
    archive = bytearray(make_zip(release_files))
    at = bytes(archive).index(b"[MASK]\nthe\n")  # vocab.txt's bytes (stored, not deflated)
    archive[at + 1] ^= 0x20  # a CRC mismatch, the zip's structure intact
    server.files[URL_PATH] = bytes(archive)
    with pytest.raises(UserError, match=r"refused, nothing was cached: .*not a valid zip.*CRC"):
        releases.download_release(NAME, progress=False)
    assert_nothing_cached(tmp_path)
    assert not (tmp_path / "cache" / (NAME + ".zip")).exists()  # a retry downloads afresh

    server.files[URL_PATH] = make_zip(release_files)
    assert releases.download_release(NAME, progress=False) == entry(tmp_path)


@pytest.mark.parametrize("damage,message", [
    ("checkpoint", r"bert/encoder/layer_1/.* is missing|missing.*bert/encoder/layer_1/"),
    ("config", r"bert_config.json has num_hidden_layers=1, the release has 2"),
    ("heads", r"lacks 7 variables of the pre-training heads \(cls/"),
])
def test_an_archive_that_is_not_the_release_is_refused(server, tmp_path, release_files, damage,
                                                       message):
    from bert_tf.modeling import checkpoint

    files = dict(release_files)
    work = tmp_path / "work"
    work.mkdir()
    for name, data in files.items():
        (work / name).write_bytes(data)
    prefix = str(work / "bert_model.ckpt")
    if damage == "config":
        config = json.loads(files["bert_config.json"])
        config["num_hidden_layers"] = 1
        files["bert_config.json"] = json.dumps(config).encode()
    else:
        values = checkpoint.read_checkpoint(prefix)
        drop = "bert/encoder/layer_1/" if damage == "checkpoint" else "cls/"
        checkpoint.write_checkpoint(prefix, {n: v for n, v in values.items()
                                             if not n.startswith(drop)}, update_state=False)
        for name in files:
            if name.startswith("bert_model.ckpt"):
                files[name] = (work / name).read_bytes()
    server.files[URL_PATH] = make_zip(files)
    with pytest.raises(UserError, match=message) as e:
        releases.download_release(NAME, progress=False)
    assert str(e.value).startswith("release %s from %s/2020_02_20/%s.zip is refused"
                                   % (NAME, server.url, NAME))
    assert "\n" not in str(e.value) and ".tmp-" not in str(e.value)
    assert_nothing_cached(tmp_path)


# ----------------------------------------------------------------- the cache, offline, errors


def test_a_cached_release_needs_no_server(server, tmp_path, release_files, monkeypatch):
    server.files[URL_PATH] = make_zip(release_files)
    releases.download_release(NAME, progress=False)
    server.stop()
    assert releases.download_release(NAME, offline=True) == entry(tmp_path)
    monkeypatch.setenv(releases.OFFLINE_ENV, "1")
    assert releases.resolve_file(NAME, "vocab_file") == os.path.join(entry(tmp_path),
                                                                     "vocab.txt")
    assert releases.resolve_file(NAME, "init_checkpoint") == os.path.join(
        entry(tmp_path), "bert_model.ckpt")


def test_offline_without_the_release_is_one_line_naming_it(server, tmp_path, monkeypatch):
    with pytest.raises(UserError, match=r"^release %s is not in the cache .*offline=True" % NAME):
        releases.download_release(NAME, offline=True)
    monkeypatch.setenv(releases.OFFLINE_ENV, "1")
    with pytest.raises(UserError, match=r"^release %s is not in the cache .*BERT_TF_OFFLINE=1"
                       % NAME) as e:
        releases.resolve_file(NAME, "init_checkpoint")
    assert "\n" not in str(e.value) and NAME in str(e.value)
    assert names_the_copy_route(str(e.value), tmp_path), str(e.value)
    assert server.requests == []
    assert_nothing_cached(tmp_path)


def _incomplete_entry(tmp_path, release_files):
    """A cache entry with the config, the vocab and the index, but no data file."""
    os.makedirs(entry(tmp_path))
    for name, data in release_files.items():
        if ".data-" not in name:
            with open(os.path.join(entry(tmp_path), name), "wb") as f:
                f.write(data)


def test_an_incomplete_cache_entry_is_no_hit_offline(server, tmp_path, release_files,
                                                     monkeypatch):
    _incomplete_entry(tmp_path, release_files)
    assert not releases.release_files_present(entry(tmp_path))
    monkeypatch.setenv(releases.OFFLINE_ENV, "1")
    with pytest.raises(UserError) as e:
        releases.download_release(NAME)
    message = str(e.value)
    assert message.startswith("release %s: the cache entry %s is incomplete (no "
                              "bert_model.ckpt.data-*), and BERT_TF_OFFLINE=1 downloads nothing"
                              % (NAME, entry(tmp_path))), message
    assert names_the_copy_route(message, tmp_path) and "\n" not in message, message
    assert server.requests == []


def test_an_incomplete_cache_entry_is_downloaded_again(server, tmp_path, release_files):
    _incomplete_entry(tmp_path, release_files)
    server.files[URL_PATH] = make_zip(release_files)
    assert releases.download_release(NAME, progress=False) == entry(tmp_path)
    assert [path for path, _ in server.requests] == [URL_PATH]
    assert sorted(os.listdir(entry(tmp_path))) == sorted(release_files)
    assert os.listdir(tmp_path / "cache") == [NAME]  # the incomplete one is gone too


@pytest.mark.parametrize("status", [404, 500])
def test_an_http_error_is_one_line_with_status_and_url(server, tmp_path, status):
    server.status[URL_PATH] = status
    with pytest.raises(UserError) as e:
        releases.download_release(NAME, progress=False)
    assert str(e.value).startswith("release %s: HTTP %d " % (NAME, status))
    assert str(e.value).endswith(server.url + URL_PATH)
    assert_nothing_cached(tmp_path)
    assert os.listdir(tmp_path / "cache") == []  # no lock file, no part


def test_a_download_broken_before_its_first_byte_leaves_nothing(server, tmp_path,
                                                                release_files):
    server.files[URL_PATH] = make_zip(release_files)
    server.cut[URL_PATH] = 0
    with pytest.raises(UserError, match=r"broke before its first byte; run again$") as e:
        releases.download_release(NAME, progress=False)
    assert "\n" not in str(e.value)
    assert os.listdir(tmp_path / "cache") == []  # no empty part to resume, no lock file


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_a_full_disk_is_one_line(server, tmp_path, release_files):
    server.files[URL_PATH] = make_zip(release_files)
    (tmp_path / "cache").mkdir()
    os.symlink("/dev/full", str(tmp_path / "cache" / (NAME + ".zip.part")))  # ENOSPC
    with pytest.raises(UserError, match=r"%s\.zip\.part: could not be written: No space left "
                                        r"on device$" % NAME) as e:
        releases.download_release(NAME, progress=False)
    assert "\n" not in str(e.value)
    assert_nothing_cached(tmp_path)


def test_no_network_is_one_line(server, tmp_path):
    server.stop()  # nothing listens on its port any more
    with pytest.raises(UserError, match=r"^release %s: cannot download %s%s: .*no network\?"
                       % (NAME, re.escape(server.url), URL_PATH)) as e:
        releases.download_release(NAME, progress=False)
    assert "\n" not in str(e.value)
    assert names_the_copy_route(str(e.value), tmp_path), str(e.value)
    assert os.listdir(tmp_path / "cache") == []  # no lock file, no part


def test_a_waiter_locks_the_new_lock_file_once_the_holder_removed_it(tmp_path):
    # The holder removes the lock file as it unlocks; a process that waited on
    # the removed file must not run beside one that locked the new file.
    path = str(tmp_path / (NAME + ".lock"))
    events, second_may_leave = [], threading.Event()

    def second():
        with download._CacheLock(path, NAME):
            events.append("second in")
            assert os.path.exists(path)
            second_may_leave.wait(30)
            events.append("second out")

    def third():
        with download._CacheLock(path, NAME):
            events.append("third in")

    with download._CacheLock(path, NAME):
        waiter = threading.Thread(target=second)
        waiter.start()
        time.sleep(0.3)  # the second waits on this lock file
        assert events == []
    assert wait_until(lambda: events == ["second in"])
    latecomer = threading.Thread(target=third)
    latecomer.start()
    time.sleep(0.3)
    assert events == ["second in"]  # the third waits for the second
    second_may_leave.set()
    waiter.join(30)
    latecomer.join(30)
    assert events == ["second in", "second out", "third in"]
    assert not os.path.exists(path)


def wait_until(condition, timeout=30):
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            return False
        time.sleep(0.01)
    return True


def _download_in_child(cache, url, results):
    os.environ[releases.CACHE_ENV] = cache
    os.environ[releases.URL_ENV] = url
    os.environ.pop(releases.OFFLINE_ENV, None)
    try:
        results.put(("ok", releases.download_release(NAME, progress=False)))
    except Exception as e:  # pylint: disable=broad-except
        results.put(("error", "%s: %s" % (type(e).__name__, e)))


@pytest.mark.slow
def test_two_processes_at_once_download_once(server, tmp_path, release_files):
    server.files[URL_PATH] = make_zip(release_files)
    server.delay = 1.0  # the first holds the lock while the second asks
    context = multiprocessing.get_context("spawn")
    results = context.Queue()
    children = [context.Process(target=_download_in_child,
                                args=(str(tmp_path / "cache"), server.url, results))
                for _ in range(2)]
    for child in children:
        child.start()
    outcomes = [results.get(timeout=120) for _ in children]
    for child in children:
        child.join(timeout=60)
    assert outcomes == [("ok", entry(tmp_path))] * 2
    assert [path for path, _ in server.requests] == [URL_PATH]
    assert releases.release_files_present(entry(tmp_path))
    assert sorted(os.listdir(entry(tmp_path))) == sorted(release_files)
    assert os.listdir(tmp_path / "cache") == [NAME]  # the lock file is gone


# ----------------------------------------------------------------- a tool with release names


@pytest.mark.slow
def test_extract_features_with_release_names(server, tmp_path, release_files):
    server.files[URL_PATH] = make_zip(release_files)
    input_file = tmp_path / "input.txt"
    input_file.write_text("the quick brown fox ||| jumps over the lazy dog\nhello world\n")
    output_file = tmp_path / "features.jsonl"
    env = dict(os.environ)
    env.update(PYTHONPATH=REPO_ROOT + os.pathsep + env.get("PYTHONPATH", ""),
               KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run(
        [sys.executable, "tools/extract_features.py", "--input_file=%s" % input_file,
         "--output_file=%s" % output_file, "--init_checkpoint=" + NAME,
         "--bert_config_file=" + NAME, "--vocab_file=" + NAME, "--layers=-1",
         "--max_seq_length=16", "--batch_size=2"],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in output_file.read_text().splitlines()]
    assert len(lines) == 2
    assert [f["token"] for f in lines[1]["features"]] == ["[CLS]", "hello", "world", "[SEP]"]
    assert len(lines[1]["features"][0]["layers"][0]["values"]) == 128
    assert [path for path, _ in server.requests] == [URL_PATH]
    assert releases.release_files_present(entry(tmp_path))
