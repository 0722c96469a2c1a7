"""The prompt-injection benchmark: attacks planted in recorded trees, the pinned sets, what each reducer lets through, and the `lrlib inject` command."""
