// Placeholder: the caching allocator is being written (issue 2).
