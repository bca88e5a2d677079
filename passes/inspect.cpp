// coopmat/inspect.h: GLSL through SPIRV-Cross's C API, disassembly through
// SPIRV-Tools (explain.cpp has the text of LowerResult::operations).
#include "coopmat/inspect.h"

#include <spirv_cross_c.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <map>
#include <string_view>
#include <vector>
#include <spirv-tools/libspirv.hpp>

namespace coopmat {
namespace {

// Owns a SPIRV-Cross context (and everything allocated from it).
class CrossContext {
 public:
  CrossContext() { spvc_context_create(&context_); }
  ~CrossContext() {
    if (context_) spvc_context_destroy(context_);
  }
  CrossContext(const CrossContext&) = delete;
  CrossContext& operator=(const CrossContext&) = delete;
  spvc_context get() const { return context_; }
  std::string LastError() const {
    const char* text = context_ ? spvc_context_get_last_error_string(context_) : nullptr;
    return text && *text ? text : "SPIRV-Cross failed without a message";
  }

 private:
  spvc_context context_ = nullptr;
};

bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Replaces every whole identifier `from` in `glsl` by `to`.
void ReplaceIdentifier(std::string& glsl, const std::string& from, const std::string& to) {
  for (size_t at = glsl.find(from); at != std::string::npos; at = glsl.find(from, at)) {
    const size_t end = at + from.size();
    if ((at > 0 && IsIdentifierChar(glsl[at - 1])) || (end < glsl.size() && IsIdentifierChar(glsl[end]))) {
      at = end;
      continue;
    }
    glsl.replace(at, from.size(), to);
    at += to.size();
  }
}

// Removes the line that declares specialization constant `name`
// ("layout(constant_id = N) const <type> <name> = <default>;").
void RemoveSpecConstantDeclaration(std::string& glsl, const std::string& name) {
  for (size_t line = 0; line < glsl.size();) {
    size_t next = glsl.find('\n', line);
    next = next == std::string::npos ? glsl.size() : next + 1;
    const std::string_view text(glsl.data() + line, next - line);
    if (text.starts_with("layout(constant_id = ") && text.find(" " + name + " = ") != std::string_view::npos) {
      glsl.erase(line, next - line);
      return;
    }
    line = next;
  }
}

// Names SPIRV-Cross gives some specialization constants, and what stands for each
// in the GLSL once it is compiled:
// - SPIRV-Cross declares a workgroup-size specialization constant only through
//   layout(local_size_x_id = ...) yet still names it in other expressions (the
//   lowering's scratch size uses it), which glslang then rejects as undeclared:
//   it becomes gl_WorkGroupSize.<axis>.
// - glslang gives one SpecId to several constants when a local_size_x_id is also a
//   constant_id (the attention sample's WARP): the LocalSizeId operand, the
//   gl_WorkGroupSize component and the named constant. SPIR-V allows that; GLSL
//   declares a constant_id once ("specialization-constant id already used"). Such
//   a constant with the workgroup size's default is that axis; of the others the
//   first declared stays and the rest name it (they hold the same value whenever
//   the id is specialized).
class SpecConstantNames {
 public:
  explicit SpecConstantNames(spvc_compiler compiler) {
    static const char* const kAxes[3] = {"gl_WorkGroupSize.x", "gl_WorkGroupSize.y", "gl_WorkGroupSize.z"};
    spvc_specialization_constant axes[3] = {};
    spvc_compiler_get_work_group_size_specialization_constants(compiler, &axes[0], &axes[1], &axes[2]);
    for (int axis = 0; axis < 3; ++axis)
      if (axes[axis].id) Rename(compiler, axes[axis].id, kAxes[axis], false);
    const spvc_specialization_constant* constants = nullptr;
    size_t count = 0;
    if (spvc_compiler_get_specialization_constants(compiler, &constants, &count) != SPVC_SUCCESS) return;
    std::map<uint32_t, std::vector<spvc_constant_id>> bySpecId;
    for (size_t i = 0; i < count; ++i) {
      const bool isAxis = std::any_of(std::begin(axes), std::end(axes), [&](const auto& a) { return a.id == constants[i].id; });
      if (!isAxis) bySpecId[constants[i].constant_id].push_back(constants[i].id);
    }
    for (const auto& [specId, ids] : bySpecId) {
      if (ids.size() < 2) continue;
      for (spvc_constant_id id : ids) {
        int axis = 0;
        while (axis < 3 && !(axes[axis].id && axes[axis].constant_id == specId &&
                             DefaultOf(compiler, axes[axis].id) == DefaultOf(compiler, id)))
          ++axis;
        if (axis < 3) {
          Rename(compiler, id, kAxes[axis], true);
          continue;
        }
        const char* name = spvc_compiler_get_name(compiler, id);
        Rename(compiler, id, name && *name ? name : "_" + std::to_string(id), true);
        shared_[specId].push_back(renamed_.size() - 1);
      }
    }
  }

  // Puts the replacements into the compiled GLSL.
  void Apply(std::string& glsl) {
    for (const auto& [specId, members] : shared_) {
      size_t first = members[0], firstAt = std::string::npos;
      for (size_t member : members)
        if (const size_t at = glsl.find(" " + renamed_[member].placeholder + " = "); at < firstAt) first = member, firstAt = at;
      for (size_t member : members) {
        if (member == first) renamed_[member].removeDeclaration = false;
        else renamed_[member].replacement = renamed_[first].replacement;
      }
    }
    for (const Renamed& r : renamed_) {
      if (r.removeDeclaration) RemoveSpecConstantDeclaration(glsl, r.placeholder);
      ReplaceIdentifier(glsl, r.placeholder, r.replacement);
    }
  }

 private:
  struct Renamed {
    std::string placeholder, replacement;
    bool removeDeclaration;
  };
  static uint32_t DefaultOf(spvc_compiler compiler, spvc_constant_id id) {
    const spvc_constant constant = spvc_compiler_get_constant_handle(compiler, id);
    return constant ? spvc_constant_get_scalar_u32(constant, 0, 0) : 0;
  }
  void Rename(spvc_compiler compiler, spvc_constant_id id, std::string replacement, bool removeDeclaration) {
    std::string placeholder = "coopmat_spec_constant_" + std::to_string(id);
    spvc_compiler_set_name(compiler, id, placeholder.c_str());
    renamed_.push_back({std::move(placeholder), std::move(replacement), removeDeclaration});
  }
  std::vector<Renamed> renamed_;
  std::map<uint32_t, std::vector<size_t>> shared_;  // SpecId -> renamed_ indices that keep a declaration
};

}  // namespace

TextResult ToVulkanGlsl(std::span<const uint32_t> words) {
  TextResult result;
  CrossContext context;
  if (!context.get()) {
    result.error = "cannot create a SPIRV-Cross context";
    return result;
  }
  spvc_parsed_ir ir = nullptr;
  spvc_compiler compiler = nullptr;
  spvc_compiler_options options = nullptr;
  const char* source = nullptr;
  if (spvc_context_parse_spirv(context.get(), words.data(), words.size(), &ir) != SPVC_SUCCESS ||
      spvc_context_create_compiler(context.get(), SPVC_BACKEND_GLSL, ir, SPVC_CAPTURE_MODE_TAKE_OWNERSHIP, &compiler) !=
          SPVC_SUCCESS) {
    result.error = context.LastError();
    return result;
  }
  SpecConstantNames names(compiler);
  if (spvc_compiler_create_compiler_options(compiler, &options) != SPVC_SUCCESS ||
      spvc_compiler_options_set_bool(options, SPVC_COMPILER_OPTION_GLSL_VULKAN_SEMANTICS, SPVC_TRUE) != SPVC_SUCCESS ||
      spvc_compiler_install_compiler_options(compiler, options) != SPVC_SUCCESS ||
      spvc_compiler_compile(compiler, &source) != SPVC_SUCCESS || !source) {
    result.error = context.LastError();
    return result;
  }
  result.ok = true;
  result.text = source;
  names.Apply(result.text);
  return result;
}

TextResult Disassemble(std::span<const uint32_t> words) {
  TextResult result;
  spvtools::SpirvTools tools(SPV_ENV_UNIVERSAL_1_6);
  tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t& position, const char* message) {
    result.error = "word " + std::to_string(position.index) + ": " + message;
  });
  result.ok = tools.Disassemble(words.data(), words.size(), &result.text,
                                SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT);
  if (!result.ok && result.error.empty()) result.error = "the disassembler failed without a message";
  return result;
}

}  // namespace coopmat
