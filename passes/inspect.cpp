// coopmat/inspect.h: GLSL through SPIRV-Cross's C API, disassembly through
// SPIRV-Tools, and the text of LowerResult::operations.
#include "coopmat/inspect.h"

#include <spirv_cross_c.h>

#include <cctype>
#include <cstdio>
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

std::string Located(const OperationReport& op) {
  std::string text = op.operation + " %" + std::to_string(op.resultId);
  if (!op.resultName.empty()) text += " \"" + op.resultName + "\"";
  text += " in function %" + std::to_string(op.functionId);
  if (!op.functionName.empty()) text += " \"" + op.functionName + "\"";
  return text;
}

std::string Microseconds(double us) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f us", us);
  return text;
}

// SPIRV-Cross declares a workgroup-size specialization constant only through
// layout(local_size_x_id = ...) yet still names it in other expressions (the
// lowering's scratch size uses it), which glslang then rejects as undeclared.
// Those constants get a placeholder name, replaced by gl_WorkGroupSize.<axis>.
constexpr const char* kAxisPlaceholders[3] = {"coopmat_workgroup_size_x", "coopmat_workgroup_size_y",
                                              "coopmat_workgroup_size_z"};

void NameWorkgroupSizeConstants(spvc_compiler compiler) {
  spvc_specialization_constant axes[3] = {};
  spvc_compiler_get_work_group_size_specialization_constants(compiler, &axes[0], &axes[1], &axes[2]);
  for (int axis = 0; axis < 3; ++axis)
    if (axes[axis].id) spvc_compiler_set_name(compiler, axes[axis].id, kAxisPlaceholders[axis]);
}

bool IsIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

void ReplaceWorkgroupSizePlaceholders(std::string& glsl) {
  static const char* const kBuiltins[3] = {"gl_WorkGroupSize.x", "gl_WorkGroupSize.y", "gl_WorkGroupSize.z"};
  for (int axis = 0; axis < 3; ++axis) {
    const std::string name = kAxisPlaceholders[axis];
    for (size_t at = glsl.find(name); at != std::string::npos; at = glsl.find(name, at)) {
      const size_t end = at + name.size();
      if ((at > 0 && IsIdentifierChar(glsl[at - 1])) || (end < glsl.size() && IsIdentifierChar(glsl[end]))) {
        at = end;
        continue;
      }
      glsl.replace(at, name.size(), kBuiltins[axis]);
      at += std::string(kBuiltins[axis]).size();
    }
  }
}

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
          SPVC_SUCCESS ||
      (NameWorkgroupSizeConstants(compiler), spvc_compiler_create_compiler_options(compiler, &options)) != SPVC_SUCCESS ||
      spvc_compiler_options_set_bool(options, SPVC_COMPILER_OPTION_GLSL_VULKAN_SEMANTICS, SPVC_TRUE) != SPVC_SUCCESS ||
      spvc_compiler_install_compiler_options(compiler, options) != SPVC_SUCCESS ||
      spvc_compiler_compile(compiler, &source) != SPVC_SUCCESS || !source) {
    result.error = context.LastError();
    return result;
  }
  result.ok = true;
  result.text = source;
  ReplaceWorkgroupSizePlaceholders(result.text);
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

std::string ExplainLowering(const LowerResult& result, const std::string& where) {
  const LowerStats& s = result.stats;
  size_t registers = 0;
  for (const OperationReport& op : result.operations) registers += op.registerPath;
  std::string text = "# " + where + "\n";
  if (!result.ok) text += "lowering failed: " + result.error + "\n";
  text += std::to_string(result.operations.size()) + " operations lowered, " + std::to_string(registers) +
          " in registers; " + std::to_string(s.wordsIn) + " -> " + std::to_string(s.wordsOut) + " words; scratch " +
          std::to_string(s.scratchBytesPerSubgroup) + " bytes per subgroup; rewrite " + Microseconds(s.microseconds) +
          "\n";
  if (!result.routeNote.empty()) text += result.routeNote + "\n";
  for (const OperationReport& op : result.operations) {
    text += Located(op) + ": ";
    text += op.registerPath ? "register path" : "portable path (" + op.portableReason + ")";
    text += "; scratch " + std::to_string(op.scratchBytes) + " bytes";
    if (op.scratchSpecialized) text += " + a size set by specialization constants";
    text += "; " + Microseconds(op.microseconds) + "\n";
  }
  return text;
}

}  // namespace coopmat
