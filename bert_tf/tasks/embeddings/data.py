"""bert-run-embeddings' inputs: the pairs TSV and the texts, one a line (no TF).

`read_pairs` (training: `anchor<TAB>positive` a line) and `read_lines`
(encoding: one text a line) give the file's contents or a one-line
`UserError` naming the flag, the file and the line. Light: the tool reads
them before TensorFlow loads, so a bad file is one line at once
(`bert_tf.tasks.embeddings.run` reads them again for its run).
"""

from bert_tf import fileio
from bert_tf.errors import UserError


def read_pairs(path, flag="train_file"):
    """[(anchor, positive)] of a two-column TSV, or a one-line UserError naming the file and line.

    A line is `anchor<TAB>positive`; a line with another number of columns,
    or an empty column, and a file without pairs, are refused.
    """
    if not fileio.exists(path):
        raise UserError("--%s=%s: no such file" % (flag, path))
    pairs = []
    with fileio.open_file(path) as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\r\n")
            columns = line.split("\t")
            if len(columns) != 2:
                raise UserError("%s:%d: %d column(s); a line is anchor<TAB>positive"
                                % (path, number, len(columns)))
            if not columns[0].strip() or not columns[1].strip():
                raise UserError("%s:%d: an empty %s; a line is anchor<TAB>positive"
                                % (path, number, "anchor" if not columns[0].strip()
                                   else "positive"))
            pairs.append((columns[0], columns[1]))
    if not pairs:
        raise UserError("%s: no pairs (the file is empty); a line is anchor<TAB>positive" % path)
    return pairs


def read_lines(path, flag="input_file"):
    """The texts of a file, one a line (newlines stripped), or a one-line UserError."""
    if not fileio.exists(path):
        raise UserError("--%s=%s: no such file" % (flag, path))
    with fileio.open_file(path) as f:
        texts = [line.rstrip("\r\n") for line in f]
    if not texts:
        raise UserError("%s: no lines (the file is empty); it takes one text a line" % path)
    return texts


def read_inputs(do_train, train_file, do_encode, input_file):
    """The files a run reads (each one given), for a bad one's error before anything else."""
    if do_train and train_file:
        read_pairs(train_file)
    if do_encode and input_file:
        read_lines(input_file)
