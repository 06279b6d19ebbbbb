"""Downloading a release into the cache: HTTP with resume, one process at a time, verified.

`fetch_release(release)` is what `bert_tf.releases.download_release(name)`
does once the name is a `Release`:

  * a progress line (`<name>.zip: 117.7/420.1 MB, 5.2 MB/s, elapsed 22s, ETA
    58s`) every 10 s, and a last one;
  * it is resumed: the bytes go to `<cache>/<name>.zip.part`, and a later call
    asks for the rest (an HTTP Range request) instead of starting again;
  * it is verified before the cache entry appears: the CRC of every member of
    the zip, every file present, `bert_config.json` equal to the release's
    known architecture (`Release.config`), the vocab fitting it, and the
    checkpoint's variables and shapes exactly the config's (the strict check
    of `bert_tf.modeling.checkpoint`, the pre-training heads included);
  * it is unpacked into `<cache>/.<name>.tmp-<pid>/` and renamed to
    `<cache>/<name>/` only then, so there is never half an entry under the
    final name; a failed verification leaves nothing but a one-line error;
  * processes that ask for the same release at once take turns on
    `<cache>/<name>.lock` (`fcntl.flock`): one downloads, the others wait and
    then find the entry; the lock file is removed when the last one is done,
    whether the download worked or failed;
  * an incomplete entry (a file missing, say `bert_model.ckpt.data-*`) is no
    cache hit: it is downloaded again and replaced once the new one is verified.

The cache is `$BERT_TF_CACHE` (default `~/.cache/bert_tf`); `BERT_TF_OFFLINE=1`
(or `offline=True`) never downloads. A copy of a release the user already has
needs no download: its directory is passed instead of the name, or its files
are put in `<cache>/<name>/`; the offline and no-network errors say so. Every
failure is one line, a `UserError`. The catalogue of releases (`RELEASES`, `resolve`) is the
package, `bert_tf.releases`; this module knows a release only by what it is
given.

This module imports no TensorFlow; verifying a download loads it.
"""

import glob
import http.client
import os
import posixpath
import shutil
import urllib.error
import urllib.request
import zipfile
import zlib

from absl import logging

from bert_tf import fileio
from bert_tf.errors import UserError
from bert_tf.item_progress import ItemProgress, format_duration

try:
    import fcntl
except ImportError:  # not POSIX: concurrent downloads of one release are not serialized
    fcntl = None

CACHE_ENV = "BERT_TF_CACHE"
OFFLINE_ENV = "BERT_TF_OFFLINE"
DEFAULT_CACHE = os.path.join("~", ".cache", "bert_tf")

# A release's files.
CONFIG_NAME = "bert_config.json"
VOCAB_NAME = "vocab.txt"
CHECKPOINT_NAME = "bert_model.ckpt"

# Bytes read from the network (and from the zip) at a time.
_CHUNK_BYTES = 1 << 20
# Seconds without a byte before a download is abandoned (it is resumed later).
_TIMEOUT_S = 60
_MB = 1e6


# ----------------------------------------------------------------- the cache


def get_cache_dir(cache_dir=None):
    """`cache_dir`, else `$BERT_TF_CACHE`, else `~/.cache/bert_tf` (user-expanded)."""
    return os.path.expanduser(cache_dir or os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def is_offline(offline=None):
    """`offline` if given, else whether `$BERT_TF_OFFLINE` is set to 1 / true / yes."""
    if offline is not None:
        return bool(offline)
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def release_files_present(directory):
    """Whether `directory` holds a release's files (config, vocab, checkpoint index and data)."""
    return not _missing_files(directory)


def _missing_files(directory):
    """The release's files that `directory` lacks (`bert_model.ckpt.data-*` for the data)."""
    missing = [name for name in (CONFIG_NAME, VOCAB_NAME, CHECKPOINT_NAME + ".index")
               if not os.path.isfile(os.path.join(directory, name))]
    if not glob.glob(os.path.join(glob.escape(directory), CHECKPOINT_NAME + ".data-*")):
        missing.append(CHECKPOINT_NAME + ".data-*")
    return missing


def _own_copy(final):
    """How to use a copy of the release the user already has, for the end of an error."""
    return ("a copy you already have: pass its directory (to a tool, its files) instead of "
            "the name, or put its files in %s" % final)


# ----------------------------------------------------------------- the download


def fetch_release(release, cache_dir=None, offline=None, progress=True):
    """The cache directory of `release`, downloaded and verified if it is not there yet.

    Args:
      release: a `Release` (`bert_tf.releases.RELEASES[name]`): its name,
        its URL and the config its files must hold.
      cache_dir: the cache; default `$BERT_TF_CACHE`, else `~/.cache/bert_tf`.
      offline: True never downloads; default `$BERT_TF_OFFLINE`.
      progress: log the download's progress lines.

    Returns:
      str, `<cache>/<name>`: `bert_config.json`, `vocab.txt`, `bert_model.ckpt.*`.

    Raises:
      UserError: one line: offline without the entry, no network, an HTTP
        error (status and URL), a download cut short (the next call resumes
        it), a damaged archive or one that is not the release (nothing is
        cached), a full disk.
    """
    name = release.name
    root = get_cache_dir(cache_dir)
    final = os.path.join(root, name)
    if release_files_present(final):
        return final
    if is_offline(offline):
        setting = ("offline=True" if offline else "%s=%s" % (OFFLINE_ENV,
                                                             os.environ.get(OFFLINE_ENV)))
        if os.path.lexists(final):
            raise UserError("release %s: the cache entry %s is incomplete (no %s), and %s "
                            "downloads nothing (unset %s to download it again; %s)"
                            % (name, final, ", ".join(_missing_files(final)), setting,
                               OFFLINE_ENV, _own_copy(final)))
        raise UserError("release %s is not in the cache %s, and %s downloads nothing "
                        "(unset %s or download it once online; %s)"
                        % (name, root, setting, OFFLINE_ENV, _own_copy(final)))
    try:
        os.makedirs(root, exist_ok=True)
    except OSError as e:
        raise (fileio.no_room_error(root, e) or UserError(
            "the release cache %s cannot be created: %s (set %s to another directory)"
            % (root, e.strerror or e, CACHE_ENV))) from None
    with _CacheLock(os.path.join(root, name + ".lock"), name):
        if release_files_present(final):
            logging.info("Release %s: cached in %s by another process", name, final)
            return final
        if os.path.islink(final) or (os.path.lexists(final) and not os.path.isdir(final)):
            raise UserError("%s is not a complete release (no %s); remove it to download %s "
                            "again" % (final, ", ".join(_missing_files(final)), name))
        if os.path.isdir(final):
            logging.warning("Release %s: the cache entry %s is incomplete (no %s): downloading "
                            "it again", name, final, ", ".join(_missing_files(final)))
        _remove_stale_temporaries(root, name)
        archive = os.path.join(root, name + ".zip")
        if not os.path.isfile(archive):
            _download(release, archive, progress, final)
        _unpack_and_verify(release, archive, final)
        fileio.remove_quietly(archive)
    logging.info("Release %s: verified and cached in %s", name, final)
    return final


class _CacheLock(object):
    """`flock` on `<cache>/<name>.lock`: one process downloads a release, the others wait.

    The holder removes the lock file before it unlocks; so a process that
    waited on that file, once it has the lock, finds another file (or none)
    at the path and locks anew (the inode of the file it locked is compared
    with the path's).
    """

    def __init__(self, path, name):
        self.path = path
        self.name = name
        self._file = None

    def __enter__(self):
        if fcntl is None:
            return self
        waited = False
        while True:
            try:
                lock_file = open(self.path, "a+")
            except OSError as e:
                raise UserError("release %s: cannot create the lock file %s: %s (set %s to a "
                                "writable directory)" % (self.name, self.path, e.strerror or e,
                                                         CACHE_ENV)) from None
            try:
                try:
                    fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if not waited:
                        logging.info("Release %s: another process is downloading it (%s); "
                                     "waiting", self.name, self.path)
                        waited = True
                    fcntl.flock(lock_file.fileno(), fcntl.LOCK_EX)
                if _same_file(lock_file, self.path):
                    self._file = lock_file
                    return self
            except BaseException:
                lock_file.close()
                raise
            lock_file.close()  # removed by the process that held it: lock the path's file

    def __exit__(self, exc_type, exc, traceback):
        if self._file is not None:
            try:
                # Before the unlock: a process waiting on this file finds it gone.
                os.unlink(self.path)
            except OSError:
                pass
            fcntl.flock(self._file.fileno(), fcntl.LOCK_UN)
            self._file.close()
            self._file = None
        return False


def _same_file(open_file, path):
    """Whether `path` is still the file `open_file` opened (not removed, not replaced)."""
    try:
        here = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(open_file.fileno())
    return (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)


def _temporary_dir(root, name):
    return os.path.join(root, ".%s.tmp-%d" % (name, os.getpid()))


def _remove_stale_temporaries(root, name):
    """Unpacking directories a killed process left (the lock is ours: none is in use)."""
    for stale in glob.glob(os.path.join(glob.escape(root), ".%s.tmp-*" % glob.escape(name))):
        shutil.rmtree(stale, ignore_errors=True)


class _ByteProgress(ItemProgress):
    """ItemProgress's line in megabytes: `<name>.zip: 117.7/420.1 MB, 5.2 MB/s, ..., ETA 58s`."""

    def line(self, now, detail=None, last=False):
        elapsed = now - self.start_time
        rate = self.done / elapsed if elapsed > 0 else None
        count = "%.1f/%.1f" % (self.done / _MB, self.total / _MB) if self.total is not None \
            else "%.1f" % (self.done / _MB)
        text = "%s: %s MB%s, %s MB/s, elapsed %s" % (
            self.what, count, " (%s)" % detail if detail else "",
            "%.1f" % (rate / _MB) if rate is not None else "?", format_duration(elapsed))
        if last:
            return text + ", done"
        if self.total is not None:
            text += ", ETA %s" % format_duration(
                (self.total - self.done) / rate if rate else None)
        return text


def _download(release, archive, progress, final):
    """Downloads the release's zip to `archive` (via `<archive>.part`, resuming it).

    `final`, the entry's directory, is named in the no-network error.
    """
    url = release.url()
    part = archive + ".part"
    offset = os.path.getsize(part) if os.path.isfile(part) else 0
    try:
        response = _open(url, offset)
    except urllib.error.HTTPError as e:
        if e.code == 416 and offset:  # the part is no prefix of this archive: start again
            fileio.remove_quietly(part)
            offset = 0
            response = _open_or_fail(release, url, 0, final)
        else:
            raise _http_error(release, url, e) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        raise _network_error(release, url, e, final) from None
    with response:
        total = response.headers.get("Content-Length")
        total = int(total) if total and total.isdigit() else None
        if offset and response.status == 206:
            logging.info("Release %s: resuming %s at %.1f MB", release.name, url, offset / _MB)
        else:
            offset = 0  # the server sent the whole archive
        expected = None if total is None else offset + total
        logging.info("Release %s: downloading %s%s into %s", release.name, url,
                     "" if expected is None else " (%.1f MB)" % (expected / _MB),
                     os.path.dirname(archive))
        meter = _ByteProgress("%s.zip" % release.name, total, "bytes") if progress else None
        try:
            with open(part, "ab" if offset else "wb") as f:
                while True:
                    try:
                        chunk = response.read(_CHUNK_BYTES)
                    except (OSError, http.client.HTTPException) as e:
                        logging.warning("Release %s: the connection broke (%s)", release.name,
                                        e)
                        break
                    if not chunk:
                        break
                    f.write(chunk)
                    if meter is not None:
                        meter.add(len(chunk))
        except OSError as e:
            raise (fileio.no_room_error(part, e) or UserError(
                "release %s: cannot write %s: %s" % (release.name, part, e.strerror or e))) \
                from None
    size = os.path.getsize(part)
    if expected is not None and size != expected:
        if not size:  # nothing to resume
            fileio.remove_quietly(part)
            raise UserError("release %s: the download of %s broke before its first byte; "
                            "run again" % (release.name, url))
        raise UserError("release %s: the download of %s was cut short at %.1f of %.1f MB; "
                        "run again to resume it (%s is kept)"
                        % (release.name, url, size / _MB, expected / _MB, part))
    if meter is not None:
        meter.finish()
    os.replace(part, archive)


def _open(url, offset):
    request = urllib.request.Request(url, headers={"User-Agent": "bert_tf"})
    if offset:
        request.add_header("Range", "bytes=%d-" % offset)
    return urllib.request.urlopen(request, timeout=_TIMEOUT_S)


def _open_or_fail(release, url, offset, final):
    try:
        return _open(url, offset)
    except urllib.error.HTTPError as e:
        raise _http_error(release, url, e) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        raise _network_error(release, url, e, final) from None


def _http_error(release, url, error):
    return UserError("release %s: HTTP %d %s from %s" % (release.name, error.code,
                                                         error.reason, url))


def _network_error(release, url, error, final):
    reason = getattr(error, "reason", None) or error
    return UserError("release %s: cannot download %s: %s (no network? with %s=1 only the "
                     "cache is used; %s)" % (release.name, url, reason, OFFLINE_ENV,
                                              _own_copy(final)))


# ----------------------------------------------------------------- unpacking and verifying


def _archive_root(names, archive):
    """The directory of the zip that holds `bert_config.json` ("" at the top)."""
    found = sorted((n for n in names if posixpath.basename(n) == CONFIG_NAME),
                   key=lambda n: (n.count("/"), n))
    if not found:
        raise _BadArchive("%s holds no %s" % (os.path.basename(archive), CONFIG_NAME))
    return posixpath.dirname(found[0])


class _BadArchive(Exception):
    """The archive is damaged or is not the release (it is removed, nothing is cached)."""


def _unpack_and_verify(release, archive, final):
    """Unpacks `archive` into a temporary directory, verifies it, renames it to `final`.

    An incomplete entry at `final` (a directory) is replaced: moved aside, then removed.
    """
    root = os.path.dirname(final)
    tmp = _temporary_dir(root, release.name)
    incomplete = tmp + ".incomplete"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        os.mkdir(tmp)
        try:
            _unpack(archive, tmp)
            verify_release_dir(tmp, release)
        except _BadArchive as e:
            fileio.remove_quietly(archive)
            raise UserError("release %s from %s is refused, nothing was cached: %s"
                            % (release.name, release.url(), e)) from None
        if os.path.isdir(final):
            os.rename(final, incomplete)
        os.rename(tmp, final)
    except OSError as e:
        failure = fileio.no_room_error(final, e)
        if failure is None:
            raise
        raise UserError("%s (the archive %s is kept: run again once there is room)"
                        % (failure, archive)) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(incomplete, ignore_errors=True)


def _unpack(archive, directory):
    """The release's files of `archive` into `directory`; every member's CRC is checked."""
    try:
        with zipfile.ZipFile(archive) as zf:
            members = [info for info in zf.infolist() if not info.is_dir()]
            top = _archive_root([info.filename for info in members], archive)
            for info in members:
                folder, base = posixpath.split(info.filename)
                with zf.open(info) as source:
                    if folder == top and base and not base.startswith("."):
                        with open(os.path.join(directory, base), "wb") as target:
                            shutil.copyfileobj(source, target, _CHUNK_BYTES)
                    else:  # read through, for its CRC
                        while source.read(_CHUNK_BYTES):
                            pass
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as e:
        raise _BadArchive("%s is not a valid zip archive (%s)"
                          % (os.path.basename(archive), e)) from None


def verify_release_dir(directory, release):
    """Checks that `directory` holds `release`: its files, config, vocab and checkpoint.

    The checkpoint's index must list exactly the variables of the release's
    config with their shapes, backbone and pre-training heads (the strict
    check of `bert_tf.modeling.checkpoint`); its values are the zip's, whose
    CRCs `_unpack` checked. Loads TensorFlow.

    Raises:
      _BadArchive: naming the file and what is wrong.
    """
    from bert_tf.modeling import checkpoint as checkpoint_lib
    from bert_tf.modeling.config import BertConfig
    from bert_tf.tokenization.vocab import check_vocab

    if not release_files_present(directory):
        missing = [name for name in (CONFIG_NAME, VOCAB_NAME, CHECKPOINT_NAME + ".index",
                                     CHECKPOINT_NAME + ".data-*")
                   if not glob.glob(os.path.join(glob.escape(directory), name))]
        raise _BadArchive("the archive has no %s" % ", ".join(missing))
    config_file = os.path.join(directory, CONFIG_NAME)
    prefix = os.path.join(directory, CHECKPOINT_NAME)

    def inside(error):  # the message of an error, with the archive's file names
        return str(error).replace(directory + os.sep, "")

    try:
        config = BertConfig.from_json_file(config_file)
        for key, want in release.config.items():
            got = getattr(config, key, None)
            if got != want:
                raise _BadArchive("its %s has %s=%r, the release has %r"
                                  % (CONFIG_NAME, key, got, want))
        check_vocab(os.path.join(directory, VOCAB_NAME), config, CONFIG_NAME)
        checkpoint_lib.check_checkpoint_files(prefix, flag=None)
        checkpoint_lib.check_checkpoint_fits(config, prefix, flag=None, head="pretraining",
                                             strict=True)
        shapes = checkpoint_lib.list_checkpoint_variables(prefix, flag=None)
        missing = [name for name in checkpoint_lib.expected_tf1_variables(config, heads=True)
                   if name not in shapes]
        if missing:
            raise _BadArchive("%s lacks %s of the pre-training heads (%s%s)"
                              % (CHECKPOINT_NAME, "variable" if len(missing) == 1
                                 else "%d variables" % len(missing), missing[0],
                                 ", ..." if len(missing) > 1 else ""))
    except UserError as e:
        raise _BadArchive(inside(e)) from None
