"""`gate demo`: FlashCore's evolution replayed as real git commits and gated in order."""
