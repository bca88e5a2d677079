#include <algorithm>
#include <random>

#include "fuzz_common.h"

namespace fuzz {
namespace {

struct Span {
  size_t begin, count;  // in words
};

// Interesting literals: sizes, Use values, scopes, masks, and boundary values.
constexpr uint32_t kInteresting[] = {0, 1, 2, 3, 4, 7, 8, 15, 16, 17, 31, 32, 33, 64, 255, 256, 1024, 4096, 65535,
                                     65536, 0x7fffffff, 0x80000000u, 0xffffffffu};
// EXT opcodes and relatives a mutation may swap in.
constexpr uint16_t kOpcodes[] = {4457, 4459, 4460, 4461, 4456, 4458, 5293 /*ConvertUseEXT*/, 5366 /*ReduceEXT*/,
                                 5369 /*PerElementOpEXT*/, 5391 /*GetCoordinateEXT*/, 115 /*FConvert*/, 114, 113,
                                 71 /*Decorate*/, 73 /*DecorationGroup*/, 74 /*GroupDecorate*/, 246 /*LoopMerge*/,
                                 247 /*SelectionMerge*/, 248 /*Label*/, 249 /*Branch*/, 250, 59 /*Variable*/, 28, 30};

}  // namespace

size_t MutateInstructions(uint8_t* data, size_t size, size_t maxSize, unsigned seed) {
  std::vector<uint32_t> words = Words(data, size);
  if (words.size() < 6) return 0;
  std::vector<Span> spans;
  for (size_t pos = 5; pos < words.size();) {
    const uint32_t count = words[pos] >> 16;
    if (count == 0 || count > words.size() - pos) return 0;
    spans.push_back({pos, count});
    pos += count;
  }
  if (spans.empty()) return 0;
  std::mt19937 random(seed);
  auto pick = [&](size_t n) { return static_cast<size_t>(random() % n); };
  const Span a = spans[pick(spans.size())];
  const Span b = spans[pick(spans.size())];
  std::vector<uint32_t> out(words.begin(), words.begin() + 5);
  auto copy = [&](const Span& s) { out.insert(out.end(), words.begin() + s.begin, words.begin() + s.begin + s.count); };
  const unsigned kind = random() % 8;
  for (const Span& s : spans) {
    const bool isA = s.begin == a.begin, isB = s.begin == b.begin;
    switch (kind) {
      case 0: if (!isA) copy(s); break;                      // delete
      case 1: copy(s); if (isA) copy(b); break;              // duplicate b after a
      case 2: copy(isA ? b : isB ? a : s); break;            // swap
      case 3: {                                              // an operand becomes another result id
        copy(s);
        if (isA && s.count > 1) {
          const Span& donor = spans[pick(spans.size())];
          out[out.size() - s.count + 1 + pick(s.count - 1)] = words[donor.begin + std::min<size_t>(2, donor.count - 1)];
        }
        break;
      }
      case 4:  // a literal becomes an interesting value
        copy(s);
        if (isA && s.count > 1)
          out[out.size() - s.count + 1 + pick(s.count - 1)] = kInteresting[pick(std::size(kInteresting))];
        break;
      case 5:  // the opcode becomes a related one (same operands)
        copy(s);
        if (isA) out[out.size() - s.count] = (s.count << 16) | kOpcodes[pick(std::size(kOpcodes))];
        break;
      case 6:  // one operand dropped or added (word count kept consistent)
        if (isA && s.count > 2 && random() % 2) {
          out.push_back(((s.count - 1) << 16) | (words[s.begin] & 0xffff));
          out.insert(out.end(), words.begin() + s.begin + 1, words.begin() + s.begin + s.count - 1);
        } else if (isA && s.count < 0xfff0) {
          out.push_back(((s.count + 1) << 16) | (words[s.begin] & 0xffff));
          out.insert(out.end(), words.begin() + s.begin + 1, words.begin() + s.begin + s.count);
          out.push_back(words[b.begin + pick(b.count)]);
        } else {
          copy(s);
        }
        break;
      default:  // the id bound or version moves
        copy(s);
        break;
    }
  }
  if (kind == 7) {
    if (random() % 2) out[3] = kInteresting[pick(std::size(kInteresting))];
    else out[1] = 0x00010000u | (static_cast<uint32_t>(pick(7)) << 8);
  }
  if (out.size() * 4 > maxSize) return 0;
  std::memcpy(data, out.data(), out.size() * 4);
  return out.size() * 4;
}

}  // namespace fuzz
