// opbench's cases (cases.txt): operations, matrices and ways, shared by the timed
// mode (opbench.cpp) and the statistics mode (stats.cpp).
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <vulkan/vulkan.h>

namespace opbench {

// ---------------------------------------------------------------------------
// Component types and matrices

enum class Type { F16, F32, U8, S8, U32, S32, BF16, E4M3, E5M2 };

struct TypeInfo {
  const char* name;
  uint32_t size;
  bool isSigned;
  VkComponentTypeKHR component;
};

inline TypeInfo Info(Type t) {
  switch (t) {
    case Type::F16: return {"f16", 2, true, VK_COMPONENT_TYPE_FLOAT16_KHR};
    case Type::F32: return {"f32", 4, true, VK_COMPONENT_TYPE_FLOAT32_KHR};
    case Type::U8: return {"u8", 1, false, VK_COMPONENT_TYPE_UINT8_KHR};
    case Type::S8: return {"s8", 1, true, VK_COMPONENT_TYPE_SINT8_KHR};
    case Type::U32: return {"u32", 4, false, VK_COMPONENT_TYPE_UINT32_KHR};
    case Type::S32: return {"s32", 4, true, VK_COMPONENT_TYPE_SINT32_KHR};
    case Type::BF16: return {"bf16", 2, true, VK_COMPONENT_TYPE_BFLOAT16_KHR};
    case Type::E4M3: return {"e4m3", 1, true, VK_COMPONENT_TYPE_FLOAT8_E4M3_EXT};
    case Type::E5M2: return {"e5m2", 1, true, VK_COMPONENT_TYPE_FLOAT8_E5M2_EXT};
  }
  return {"?", 0, false, VK_COMPONENT_TYPE_MAX_ENUM_KHR};
}

inline std::optional<Type> ParseType(const std::string& s) {
  for (Type t : {Type::F16, Type::F32, Type::U8, Type::S8, Type::U32, Type::S32, Type::BF16, Type::E4M3, Type::E5M2})
    if (s == Info(t).name) return t;
  return std::nullopt;
}

struct Matrix {
  std::string use;  // a, b, acc
  Type type;
  uint32_t rows, cols;
  std::string Shape() const { return std::to_string(rows) + "x" + std::to_string(cols); }
  std::string Name() const { return use + "_" + Info(type).name + "_" + Shape(); }
  std::string Label() const { return use + ":" + Info(type).name; }
  size_t Elements() const { return size_t(rows) * cols; }
};

inline std::optional<Matrix> ParseMatrix(const std::string& spec) {  // "acc:f32:16x16"
  const size_t a = spec.find(':'), b = spec.find(':', a + 1), x = spec.find('x', b + 1);
  if (a == std::string::npos || b == std::string::npos || x == std::string::npos) return std::nullopt;
  const std::string use = spec.substr(0, a);
  const auto type = ParseType(spec.substr(a + 1, b - a - 1));
  if ((use != "a" && use != "b" && use != "acc") || !type) return std::nullopt;
  return Matrix{use, *type, static_cast<uint32_t>(std::stoul(spec.substr(b + 1, x - b - 1))),
                static_cast<uint32_t>(std::stoul(spec.substr(x + 1)))};
}

// ---------------------------------------------------------------------------
// Cases

// kPortable runs the layer's shader (cases.txt's "layer") on the lowering=portable instance.
enum WayIndex { kLayer, kNative, kWorkaround, kPortable, kWays };
constexpr int kListedWays = 3;  // the ways cases.txt names
constexpr const char* kWayNames[kWays] = {"layer", "nv", "khr", "layer"};

struct Case {
  std::string op;  // getcoord, perelem, reduce_row, ..., convert, transpose
  Matrix source, result;
  bool has[kWays] = {};
  // The shader name stem, as samples/opbench/CMakeLists.txt builds it.
  std::string Name() const {
    std::string name = op + "_" + source.Name();
    if (source.use != result.use || source.type != result.type)
      name += "_to_" + result.use + "_" + Info(result.type).name;
    return name;
  }
  std::string TypeLabel() const {
    return source.Label() == result.Label() ? source.Label() : source.Label() + "->" + result.Label();
  }
};

inline std::vector<Case> ReadCases(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot open " + path);
  std::vector<Case> cases;
  std::string line;
  while (std::getline(file, line)) {
    std::istringstream in(line);
    std::string op, source, result, ways;
    if (!(in >> op) || op[0] == '#') continue;
    in >> source >> result >> ways;
    const auto s = ParseMatrix(source), r = ParseMatrix(result);
    if (!s || !r || ways.empty()) throw std::runtime_error(path + ": bad line: " + line);
    Case c{op, *s, *r};
    for (int w = 0; w < kListedWays; ++w)
      c.has[w] = ("," + ways + ",").find(std::string(",") + kWayNames[w] + ",") != std::string::npos;
    c.has[kPortable] = c.has[kLayer];
    cases.push_back(c);
  }
  return cases;
}

// --filter: a comma-separated list; a case runs when its name contains any item.
inline bool Selected(const Case& c, const std::string& filter) {
  if (filter.empty()) return true;
  size_t start = 0;
  while (start <= filter.size()) {
    const size_t end = std::min(filter.find(',', start), filter.size());
    if (end > start && c.Name().find(filter.substr(start, end - start)) != std::string::npos) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace opbench
