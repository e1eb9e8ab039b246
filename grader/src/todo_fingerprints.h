// The fingerprints of a lab's pristine TODO regions (labs/<dir>/todo_fingerprints.txt).
//
// The grader lists a submission's open TODOs: the regions whose text is still the starter's.
// Comparing with the course's starter/ is wrong when the submission IS that starter/ (the course
// guide's workflow grades the student's own tree in place): every region would look untouched.
// So the course records, per pristine region, a 64-bit FNV-1a of its lines, markers included:
// a submission region with the recorded fingerprint is open, one edited in any way is not.
// `gtl-grade rubric-table --write` generates the file from starter/; `--check` and
// `gtl-grade verify` fail when it is stale or missing, naming the command that regenerates it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "rubric.h"

namespace gtl::grader {

// One recorded region: the student file (relative to the lab's folder), its id, its fingerprint.
struct RegionFingerprint {
  std::string file;
  std::string id;
  std::uint64_t hash = 0;
};

// 64-bit FNV-1a of `text`.
std::uint64_t fnv1a64(const std::string& text);

// The fingerprint of each TODO(lab) region of `text`, in file order: the FNV-1a of its lines
// from begin to end marker, each followed by '\n'. Empty when the markers do not balance.
std::vector<RegionFingerprint> region_fingerprints(const std::string& text, const std::string& lab,
                                                   const std::string& file);

// labs/<dir>/todo_fingerprints.txt under `course`.
std::filesystem::path todo_fingerprints_path(const std::filesystem::path& course,
                                             const Rubric& lab);

// The file's text for the pristine starter/<dir> of `course`: a header, then one line per
// region, "<file> <id> <16 hex digits>".
std::string todo_fingerprints_text(const std::filesystem::path& course, const Rubric& lab);

// The recorded fingerprints of `lab`, or nullopt when the course has no file for it.
// Throws RubricError naming the file and line when a line is malformed.
std::optional<std::vector<RegionFingerprint>> recorded_fingerprints(
    const std::filesystem::path& course, const Rubric& lab);

// "" when the recorded file is the pristine starter's; else what is wrong (missing or stale),
// naming the lab and the command that regenerates it.
std::string todo_fingerprints_problem(const std::filesystem::path& course, const Rubric& lab);

}  // namespace gtl::grader
