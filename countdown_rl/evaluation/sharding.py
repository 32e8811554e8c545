"""Sharding an evaluation set over the processes of a job: contiguous shards, padded to one length when needed.

Under sharded weights (FSDP, DeepSpeed ZeRO-3) every forward is a collective, so every rank must run the same
generation steps: the shards are padded to one length with copies of the first row, dropped again after.
"""

from __future__ import annotations

__all__ = ["padded_shard"]


def padded_shard(dataset, num_shards: int, index: int, *, pad: bool) -> tuple[list, int]:
    """Shard ``index`` of ``num_shards`` contiguous shards of ``dataset`` (rows in order, every row in one shard),
    and how many copies of the first row were added to make it as long as the longest shard (``pad``: for
    sharded weights, where every rank must run the same generation steps). Drop that many results after.

    >>> padded_shard(list(range(5)), 2, 1, pad=True)
    ([3, 4, 0], 1)
    >>> padded_shard(list(range(5)), 2, 1, pad=False)
    ([3, 4], 0)
    """
    size, extra = divmod(len(dataset), num_shards)
    start = index * size + min(index, extra)
    rows = [dataset[i] for i in range(start, start + size + (index < extra))]
    padding = size + (extra > 0) - len(rows) if pad else 0
    return rows + [dataset[0]] * padding if padding else rows, padding
