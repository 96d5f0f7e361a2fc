"""The lessons' outputs from many datatrove tasks, on one machine or a cluster: readers.py (the
input), executors.py (work directory, executors, options), layouts.py (the outputs' shapes),
stages.py (the steps; the only module importing datatrove at load), pipeline.py (them run) and
training.py (tokenizer training). prepare_common, safety and bpe never import it.
"""
