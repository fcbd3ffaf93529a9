"""The kit's upper bounds on a sizing config, so a huge value fails at once instead of sweeping
for minutes or allocating GBs: the command line's options take them as their ranges, and
`SizingConfig.within_limits` holds a config to them where one enters from a serve line, a log
or `audit`."""

MAX_NUM_SEQS_LIMIT = 65536  # S
NUM_SPECULATIVE_TOKENS_LIMIT = 64  # k
MAX_NUM_BATCHED_TOKENS_LIMIT = 2**20  # T, and every capture size
