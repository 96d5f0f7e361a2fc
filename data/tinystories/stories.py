"""data/tinystories/prepare.py's output files, written in the order of the JSON files' names
whatever the archive's order, the figures it prints, and a BPE trained on stories."""

import argparse
import contextlib
import functools
import random
import sys
import warnings
from collections import Counter, namedtuple

import numpy as np
from archive import ArchiveError, json_stories

from formats.schema import FIGURES
from formats.shards import LLMC_HEADER_INTS, llmc_header
from formats.val_bytes import figure_totals
from prepare_common import write_document_starts
from safety.cli import whole_number
from safety.files import sha256_file
from safety.spool import Spool

SPLITS = ("val", "train")  # llm.c writes val first
# a JSON file's stories: their lengths, {figure: a value a story}, --dedup keys, byte figures
Member = namedtuple("Member", "lengths counts keys rows")


def shuffled_stories(name, data):
    """llm.c's order of a JSON file's stories: stripped, shuffled by 1337 + its split index."""
    stories = [story.strip() for story in json_stories(name, data)]
    random.Random(1337 + max(int(name[4:6]) - 1, 0)).shuffle(stories)
    return stories


class SplitFiles(contextlib.AbstractContextManager):
    """One output file per split, each the ids of its members in the order of their names:
    nanoGPT's val.bin and train.bin, or (llmc) llm.c's TinyStories_{val,train}.bin, headed."""

    BASIC = ("files", "stories", "characters")  # the other figures count tokens

    def __init__(self, out, dtype, llmc=False):
        self.dtype, self.llmc = np.dtype(dtype), llmc
        prefix = "TinyStories_" if llmc else ""
        self.files = {split: f"{prefix}{split}.bin" for split in SPLITS}
        self.spools = {}
        try:
            for split, name in self.files.items():
                self.spools[split] = Spool(out / name, dtype, 4 * LLMC_HEADER_INTS if llmc else 0)
        except BaseException:
            self.discard()
            raise
        self.members = {split: {} for split in SPLITS}  # {member name: its Member}
        self.kept = {}  # after `deduplicate`: {member name: which of its stories are kept}

    def add(self, split, name, ids, lengths, counts, keys=None, rows=None):
        """Member `name`'s ids, its stories' lengths, figures, --dedup keys and byte figures."""
        self.spools[split].add(name, ids)
        self.members[split][name] = Member(np.asarray(lengths, np.int64), counts, keys, rows)

    def deduplicate(self, rule):
        """--dedup: drop each story repeating an earlier one, val's first, then train's by file
        name: no train story keeps a copy in val. -> {"val": dropped, "train": dropped}."""
        from dedup.drop import keep_documents

        members = [(split, name) for split in SPLITS for name in sorted(self.members[split])]
        keys = [self.members[split][name].keys for split, name in members]
        keep = keep_documents(rule, keys)
        dropped, first = Counter(), 0
        for split, name in members:
            count = len(self.members[split][name].lengths)
            self.kept[name] = keep[first : first + count]
            dropped[split] += count - int(self.kept[name].sum())
            first += count
        return {split: dropped[split] for split in SPLITS}

    def tokens(self, split):
        """The number of ids in the split's file (of the stories kept)."""
        if not self.kept:
            return self.spools[split].total
        return sum(int(self.kept_lengths(split, name).sum()) for name in self.members[split])

    def kept_lengths(self, split, name):
        return self._kept(name, self.members[split][name].lengths)

    def _kept(self, name, values):
        return values if name not in self.kept else values[self.kept[name]]

    def _kept_ids(self, split, name, ids):
        return ids[np.repeat(self.kept[name], self.members[split][name].lengths)]

    def figures(self, split):
        """The split's files, stories kept, and the sum of each of `add`'s counts."""
        figures = Counter(files=len(self.members[split]), stories=0)
        for name, member in self.members[split].items():
            figures["stories"] += len(self.kept_lengths(split, name))
            figures.update({k: int(self._kept(name, n).sum()) for k, n in member.counts.items()})
        return figures

    def check(self, archive, whole=True):
        """The files must be data00.json (val), data01.json, ... (train), none missing (the
        seeds of the shuffles), any train ones if not `whole`; no split empty."""
        names = sorted(name for split in SPLITS for name in self.members[split])
        expected = [f"data{i:02d}.json" for i in range(len(names))]
        if len(names) < 2 or (names != expected if whole else names[0] != expected[0]):
            raise ArchiveError(
                f"{archive} holds {', '.join(names) or 'no JSON file'}; expected data00.json "
                f"(val), data01.json and so on (train), none missing"
            )
        empty = [split for split in SPLITS if not self.tokens(split)]
        if empty:
            raise ArchiveError(
                f"{archive}: {' and '.join(empty)} holds no story; nanoGPT reads both"
            )

    def summary(self, tokenizer_name):
        """Each split's files, stories and tokens, then tokens per story and characters per
        token for the tokenizer and any other counted (the end-of-text counts per story)."""
        lines = []
        for split in SPLITS:
            figures = self.figures(split)
            stories, characters = figures["stories"], figures["characters"]
            tokens = self.tokens(split)
            lines.append(
                f"{split}: {figures['files']:,} file(s), {stories:,} stories, "
                f"{characters:,} characters, {tokens:,} tokens"
            )
            others = [(k, n) for k, n in figures.items() if k not in self.BASIC]
            for name, n in [(tokenizer_name, tokens), *others]:
                if stories and n > stories:
                    lines.append(
                        f"  {name}: {n / stories:,.1f} tokens per story, "
                        f"{characters / (n - stories):.2f} characters per token"
                    )
        return lines

    def finish(self, archive, whole=True):
        """`check`, then write each split's file (and nanoGPT's SPLIT.docs.npy) -> write_meta's
        {"shards": [...], "shard_format": "llmc"} or {"split_tokens": {"val": n, "train": n}}."""
        self.check(archive, whole)
        shards = []
        for split, spool in self.spools.items():
            pick = functools.partial(self._kept_ids, split) if self.kept else None
            path = spool.finish(self._header_bytes, pick)
            shard = {"file": path.name, "split": split, "tokens": spool.total}
            shards.append({**shard, "sha256": sha256_file(path)})
            if not self.llmc:
                lengths = [self.kept_lengths(split, name) for name in sorted(self.members[split])]
                write_document_starts(path.with_suffix(".docs.npy"), np.concatenate(lengths))
        if self.llmc:
            return {"shards": shards, "shard_format": "llmc"}
        return {"split_tokens": {shard["split"]: shard["tokens"] for shard in shards}}

    def counted(self):
        """write_meta's `counted`: each split's byte figures, in the files' order, of the kept."""
        none = np.zeros((0, len(FIGURES)), np.int64)
        rows = {
            split: np.concatenate([none, *(self._kept(n, m.rows) for n, m in sorted(ms.items()))])
            for split, ms in self.members.items()
        }
        return figure_totals(rows)

    def _header_bytes(self, total):
        return llmc_header(total, self.dtype).tobytes() if self.llmc else b""

    def discard(self):
        for spool in self.spools.values():
            spool.discard()

    def __exit__(self, *exc):
        self.discard()


def story_vocab_size(text):
    """--vocab-size: a whole number with room for the 256 bytes and <|endoftext|> (bpe's check)."""
    from bpe import EOT
    from bpe.checks import check_training_args

    value = whole_number(text)
    try:
        check_training_args(value, [EOT], "gpt2")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def train_story_bpe(files, vocab_size, end_of_text, num_workers=1):
    """A byte-level BPE of exactly vocab_size tokens, `end_of_text` the last, learned from the
    stories of `files` (a list of stories a file), each stripped as llm.c encodes it."""
    from bpe import Tokenizer, train_bpe_from_counts
    from documents.corpus import count_texts
    from safety.text import without_lone_surrogates

    texts = (
        without_lone_surrogates(end_of_text.join(s.strip() for s in stories)) for stories in files
    )
    counts = count_texts(texts, "gpt2", [end_of_text], num_workers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the short-fall warning: refused below instead
        vocab, merges = train_bpe_from_counts(counts, vocab_size, [end_of_text])
    if len(vocab) != vocab_size:
        raise ArchiveError(
            f"the train stories hold too few pairs for a vocabulary of {vocab_size:,} tokens "
            f"(they give {len(vocab):,}); ask for fewer"
        )
    return Tokenizer(vocab, merges, special_tokens={end_of_text: vocab_size - 1})


if __name__ == "__main__":
    print("error: stories.py is a module of data/tinystories/prepare.py; run that", file=sys.stderr)
    sys.exit(2)
