// The embedded corpus: a short original text for the GPT demo and its tests.
//
// "The Lamplighter's Ledger", about 8.5 KB of plain ASCII prose written for this course by its
// authors. License: CC0 1.0 (public domain dedication): copy, change and redistribute it
// without asking. It is compiled into the library (corpus.cpp) so the demo and the tests need no
// file and no download; data::load_text_file reads any other UTF-8 text instead.
//
// Why a story with repeated names, refrains and a small vocabulary: a byte-level model of a few
// hundred thousand parameters can learn its spelling and common words within a minute on two
// cores, so the validation loss visibly falls below a unigram model's (~3 nats per byte) and the
// samples start to read like the text.
#pragma once

#include <string_view>

namespace gtl::data {

std::string_view embedded_corpus();

}  // namespace gtl::data
