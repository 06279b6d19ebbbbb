"""Sharded mode: shards of documents, each generated on its own, in worker processes.

No counterpart in the original: `generate_shard` runs the original algorithm
(`instances.py`) on one shard with its own seed, `run_sharded` hands the
shards to a pool of forked processes and writes their records in shard
order, and `generate_shard_split` lets the workers share a shard (with
`rng_plan.py`) when there are fewer shards than workers. See `create.py`
for the mode.
"""

import array
import gc
import glob
import itertools
import os
import random

from absl import logging

from bert_tf import fileio
from bert_tf.data import tfrecord
from bert_tf.tasks.pretraining.data import instances
from bert_tf.data import text_files
from bert_tf.tasks.pretraining.data import tokens
from bert_tf.tasks.pretraining.data import writing
from bert_tf.errors import UserError


# --------------------------------------------------------------------------
# Sharded mode: workers.
# --------------------------------------------------------------------------

# Per worker process: set once by `_init_worker` (fork start method) so the
# tokenizer is not pickled. The library's callers never see it.
_WORKER = {}


def _init_worker(tokenizer, vocab_file, vocab_info, options, spool=None):
    _WORKER["cached"] = tokens.CachedTokenizer(tokenizer, vocab_file)
    _WORKER["vocab_info"] = vocab_info
    _WORKER["options"] = options
    _WORKER["spool"] = spool


def _spool_name(output_files):
    """The prefix of the files that workers hand their records over in, or None.

    Beside the first output (`<output>.tmp-<pid>-part-...`), on its file
    system, so they take no memory; None for a remote output (the records
    then come back through the pool's pipe).
    """
    if fileio.is_remote(output_files[0]):
        return None
    return fileio.temporary_name(output_files[0]) + "-part"


def _hand_over(framed, spool, name):
    """A worker's framed records, as the bytes themselves or the name of a file holding them.

    A pipe moves a result in 64 KB pieces, each a wake-up of the reading
    process, and copies it four times; through a file it costs the writer
    one write and the reader one read (with two workers on two cores, about
    a tenth of the wall time).
    """
    if spool is None:
        return framed
    path = "%s-%s" % (spool, name)
    with open(path, "wb") as f:
        f.write(framed)
    return path


def _take_over(result):
    """The framed bytes of `_hand_over`'s result (its file removed)."""
    if isinstance(result, bytes):
        return result
    with open(result, "rb") as f:
        framed = f.read()
    os.remove(result)
    return framed


def _remove_spooled(spool):
    if spool is not None:
        for path in glob.glob(glob.escape(spool) + "-*"):
            fileio.remove_quietly(path)


def _process_shard(task):
    """Runs the original algorithm on one shard; returns its records, framed."""
    shard_index, raw_documents = task
    num_documents, records = generate_shard(shard_index, raw_documents, _WORKER["cached"],
                                            _WORKER["vocab_info"], _WORKER["options"])
    # Framed here (the CRCs), so the process that writes only copies bytes.
    lengths = array.array("I", [len(r) + 16 for r in records])
    framed = _hand_over(tfrecord.frame_records(records), _WORKER.get("spool"),
                        "%d" % shard_index)
    return shard_index, num_documents, framed, lengths.tobytes()


def generate_shard(shard_index, raw_documents, cached_tokenizer, vocab_info, options):
    """One shard of the sharded mode: its instances, whichever driver runs it.

    Tokenizes the shard's documents, then runs the original algorithm on them
    alone with `random.Random(shard_seed(random_seed, shard_index))`, the
    final instance shuffle included.

    Args:
      shard_index: int, k.
      raw_documents: the shard's documents, lists of stripped non-empty lines
        (from `text_files.iter_raw_documents` or `text_files.read_shard_documents`).
      cached_tokenizer: a `tokens.CachedTokenizer`.
      vocab_info: a `tokens.VocabInfo`.
      options: dict of the original flags (`max_seq_length`,
        `max_predictions_per_seq`, `random_seed`, `dupe_factor`,
        `masked_lm_prob`, `short_seq_prob`, `do_whole_word_mask`).

    Returns:
      (number of documents with tokens, list of serialized Examples in
      output order).
    """
    o = options
    documents = tokens.tokenize_documents(raw_documents, cached_tokenizer)
    records = []
    if documents:
        rng = random.Random(instances.shard_seed(o["random_seed"], shard_index))
        generator = instances.new_generator(rng, vocab_info, o)
        instances.generate(generator, documents, o["dupe_factor"], records.append)
        generator.shuffle(records)
    return len(documents), records


def generate_shard_split(shard_index, raw_documents, cached_tokenizer, vocab_info, options,
                         num_workers):
    """`generate_shard`'s records, framed, made by `num_workers` processes together.

    The shard's units (one `instances_from_document` per dupe pass and
    document) are cut into runs of consecutive units; this process finds where
    each run starts in the random stream (`rng_plan.RngPlanner`) and hands the
    runs to forked workers as it goes, which generate them from that state.
    Then it draws the final instance shuffle from where the last unit ends.
    The records are `generate_shard`'s, in the same order (each run's last
    word is checked against the plan).

    Returns:
      (number of documents with tokens, framed records in output order (bytes),
      array of their framed lengths).
    """
    from bert_tf.tasks.pretraining.data import rng_plan  # pylint: disable=g-import-not-at-top
    import multiprocessing  # pylint: disable=g-import-not-at-top
    o = options
    documents = tokens.tokenize_documents(raw_documents, cached_tokenizer)
    if not documents:
        return 0, b"", array.array("I")
    rng = random.Random(instances.shard_seed(o["random_seed"], shard_index))
    generator = instances.new_generator(rng, vocab_info, o)
    generator.shuffle_documents(documents)
    planner = rng_plan.RngPlanner(rng, documents, o["max_seq_length"],
                                  o["max_predictions_per_seq"], o["masked_lm_prob"],
                                  o["short_seq_prob"], len(vocab_info.vocab_ids))
    num_documents = len(documents)
    num_units = o["dupe_factor"] * num_documents
    num_runs = min(num_units, 4 * num_workers)
    cuts = [num_units * k // num_runs for k in range(num_runs + 1)]
    _WORKER["split"] = {"documents": documents, "vocab_info": vocab_info, "options": o,
                        "spool": _WORKER.get("spool"), "shard_index": shard_index}
    # The workers inherit the documents; frozen, the garbage collector of a
    # worker never writes to (and so copies) their pages.
    gc.freeze()
    try:
        pool = multiprocessing.get_context("fork").Pool(num_workers)  # inherits _WORKER
    finally:
        gc.unfreeze()
    try:
        pending = []
        for k in range(num_runs):
            state = planner.state_at(planner.position)
            for unit in range(cuts[k], cuts[k + 1]):
                planner.plan_document(unit % num_documents)
            pending.append((pool.apply_async(_generate_units, (cuts[k], cuts[k + 1], state)),
                            planner.word_at(planner.position)))
        # rng.shuffle(instances) from where the last unit ends, on indexes.
        rng.setstate(planner.state_at(planner.position))
        order = array.array("Q", range(planner.instances))
        generator.shuffle(order)
        blobs = []
        lengths = array.array("I")
        for result, expected_word in pending:
            framed, lengths_bytes, next_word = result.get()
            framed = _take_over(framed)
            if next_word != expected_word:
                raise RuntimeError("internal error: a run of units ended elsewhere in the "
                                   "random stream than planned")
            blobs.append(framed)
            lengths.frombytes(lengths_bytes)
    finally:
        pool.terminate()
        pool.join()
        _WORKER.pop("split", None)
    if len(lengths) != len(order):
        raise RuntimeError("internal error: %d instances made, %d planned"
                           % (len(lengths), len(order)))
    framed = b"".join(blobs)
    del blobs
    offsets = array.array("Q", [0])
    total = 0
    for length in lengths:
        total += length
        offsets.append(total)
    view = memoryview(framed)
    out = b"".join([view[offsets[i]:offsets[i + 1]] for i in order])
    return num_documents, out, array.array("I", [lengths[i] for i in order])


def _generate_units(first, last, state):
    """Worker: units [first, last) of a split shard from the random state `state`."""
    split = _WORKER["split"]
    documents = split["documents"]
    rng = random.Random()
    rng.setstate(state)
    generator = instances.new_generator(rng, split["vocab_info"], split["options"])
    records = []
    num_documents = len(documents)
    for unit in range(first, last):
        generator.instances_from_document(documents, unit % num_documents, records.append)
    lengths = array.array("I", [len(r) + 16 for r in records])
    framed = _hand_over(tfrecord.frame_records(records), split["spool"],
                        "%d-%d" % (split["shard_index"], first))
    return framed, lengths.tobytes(), rng.getrandbits(32)


def _can_split_shards(o):
    """Whether `generate_shard_split` can plan this configuration."""
    return not o["do_whole_word_mask"] and instances.inline_rng_ok()


def _iter_shards(input_files, documents_per_shard, decode_stats):
    shard = []
    shard_index = 0
    for raw in text_files.iter_raw_documents(input_files, decode_stats):
        shard.append(raw)
        if len(shard) == documents_per_shard:
            yield shard_index, shard
            shard_index += 1
            shard = []
    if shard:
        yield shard_index, shard


def run_sharded(input_files, output_files, tokenizer, vocab_file, vocab_info, o,
                num_workers, documents_per_shard):
    decode_stats = text_files.DecodeStats()
    logging.info("Sharded mode: %d documents per shard, %d worker process(es); "
                 "shard k uses seed shard_seed(%d, k)", documents_per_shard, num_workers,
                 o["random_seed"])
    writing.log_outputs(output_files)
    writer = writing.RoundRobinWriter(output_files, vocab_info)
    spool = _spool_name(output_files) if num_workers > 1 else None
    pool = None
    num_documents = 0
    num_shards = 0
    progress = writing.Progress("instances written")
    try:
        shards = _iter_shards(input_files, documents_per_shard, decode_stats)
        head = []
        if num_workers > 1 and _can_split_shards(o):
            head = list(itertools.islice(shards, num_workers))
            shards = itertools.chain(head, shards)
        if len(head) < num_workers and head:
            # Fewer shards than workers: the workers share each shard instead.
            _init_worker(tokenizer, vocab_file, vocab_info, o, spool)
            results = (_split_shard(shard, num_workers) for shard in head)
        elif num_workers == 1:
            _init_worker(tokenizer, vocab_file, vocab_info, o)
            results = map(_process_shard, shards)
        else:
            import multiprocessing  # pylint: disable=g-import-not-at-top
            context = multiprocessing.get_context("fork")
            pool = context.Pool(num_workers, initializer=_init_worker,
                                initargs=(tokenizer, vocab_file, vocab_info, o, spool))
            results = _ordered_bounded(pool, _process_shard, shards, 2 * num_workers)
        for _, shard_documents, framed, lengths_bytes in results:
            lengths = array.array("I")
            lengths.frombytes(lengths_bytes)
            writer.write_framed(_take_over(framed), lengths)
            num_documents += shard_documents
            num_shards += 1
            progress.update(writer.total_written, ", %d shards" % num_shards)
        text_files.warn_decode(decode_stats)
        if not num_documents:
            raise UserError("--input_file: no documents (every line tokenizes to nothing)")
        writer.close()
    except BaseException:
        writer.abort()
        raise
    finally:
        if pool is not None:
            pool.terminate()
            pool.join()
        _WORKER.clear()
        _remove_spooled(spool)
    return {"instances": writer.total_written, "documents": num_documents,
            "mode": "sharded", "shards": num_shards}


def _split_shard(task, num_workers):
    shard_index, raw_documents = task
    num_documents, framed, lengths = generate_shard_split(
        shard_index, raw_documents, _WORKER["cached"], _WORKER["vocab_info"],
        _WORKER["options"], num_workers)
    return shard_index, num_documents, framed, lengths.tobytes()


def _ordered_bounded(pool, func, tasks, max_in_flight):
    """Like `pool.imap(func, tasks)`, but reads at most `max_in_flight` tasks ahead.

    (`Pool.imap` consumes its input iterator eagerly, which would read the
    whole corpus into memory.)
    """
    pending = []
    tasks = iter(tasks)
    exhausted = False
    while True:
        while not exhausted and len(pending) < max_in_flight:
            try:
                task = next(tasks)
            except StopIteration:
                exhausted = True
                break
            pending.append(pool.apply_async(func, (task,)))
        if not pending:
            return
        yield pending.pop(0).get()
