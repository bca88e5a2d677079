// glsl-batch: compiles a list of GLSL compute shaders to SPIR-V in one process, as
// `glslangValidator -V --quiet --target-env <env> -D... -I... -o <out> <src>` would one by
// one, and validates each result as `spirv-val --target-env <vulkan env>` would.
//
// Why: glslangValidator spends ~0.18 s of its ~0.28 s per test shader building its
// built-in symbol tables, which glslang keeps for the whole process. The build compiles
// some two thousand variants; one process per batch saves most of that time.
//
//   glsl-batch [--keep-going] <jobs file>
//
// One job per line, fields separated by tabs:
//   <output.spv> <glslang target env> <spirv-val target env or -> <source> [-DNAME[=VALUE] | -IDIR]...
// glslang target envs: spirv1.0 .. spirv1.6 (Vulkan 1.0 client), vulkan1.0 .. vulkan1.4.
// Each output is written whole (a temporary file renamed) only after it compiled and
// validated; the first failure prints glslang's or the validator's message and exits 1
// (--keep-going: every job is tried, and the run exits 1 if one failed).
#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <spirv-tools/libspirv.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Job {
  std::string output, env, validate_env, source;
  std::vector<std::string> defines, include_dirs;
};

struct TargetEnv {
  glslang::EShTargetClientVersion client;
  glslang::EShTargetLanguageVersion spirv;
};

std::optional<TargetEnv> ParseTargetEnv(const std::string& name) {
  static const std::map<std::string, TargetEnv> envs = {
      {"spirv1.0", {glslang::EShTargetVulkan_1_0, glslang::EShTargetSpv_1_0}},
      {"spirv1.1", {glslang::EShTargetVulkan_1_0, glslang::EShTargetSpv_1_1}},
      {"spirv1.2", {glslang::EShTargetVulkan_1_0, glslang::EShTargetSpv_1_2}},
      {"spirv1.3", {glslang::EShTargetVulkan_1_0, glslang::EShTargetSpv_1_3}},
      {"spirv1.4", {glslang::EShTargetVulkan_1_0, glslang::EShTargetSpv_1_4}},
      {"spirv1.5", {glslang::EShTargetVulkan_1_0, glslang::EShTargetSpv_1_5}},
      {"spirv1.6", {glslang::EShTargetVulkan_1_0, glslang::EShTargetSpv_1_6}},
      {"vulkan1.0", {glslang::EShTargetVulkan_1_0, glslang::EShTargetSpv_1_0}},
      {"vulkan1.1", {glslang::EShTargetVulkan_1_1, glslang::EShTargetSpv_1_3}},
      {"vulkan1.2", {glslang::EShTargetVulkan_1_2, glslang::EShTargetSpv_1_5}},
      {"vulkan1.3", {glslang::EShTargetVulkan_1_3, glslang::EShTargetSpv_1_6}},
      {"vulkan1.4", {glslang::EShTargetVulkan_1_4, glslang::EShTargetSpv_1_6}},
  };
  auto it = envs.find(name);
  if (it == envs.end()) return std::nullopt;
  return it->second;
}

std::optional<spv_target_env> ParseValidateEnv(const std::string& name) {
  spv_target_env env;
  if (!spvParseTargetEnv(name.c_str(), &env)) return std::nullopt;
  return env;
}

std::optional<std::string> ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// #include "x": the including file's folder first, then the -I folders, as glslangValidator's
// includer searches them.
class Includer : public glslang::TShader::Includer {
 public:
  Includer(std::filesystem::path source, const std::vector<std::string>& dirs) : source_(std::move(source)) {
    for (const auto& dir : dirs) dirs_.emplace_back(dir);
  }
  IncludeResult* includeLocal(const char* header, const char* includer, size_t) override {
    std::filesystem::path from = (includer && *includer) ? std::filesystem::path(includer) : source_;
    return Find(header, from.parent_path());
  }
  IncludeResult* includeSystem(const char* header, const char*, size_t) override { return Find(header, {}); }
  void releaseInclude(IncludeResult* result) override {
    if (result) delete static_cast<std::string*>(result->userData);
    delete result;
  }

 private:
  IncludeResult* Find(const std::string& header, const std::filesystem::path& first) {
    std::vector<std::filesystem::path> candidates;
    if (!first.empty()) candidates.push_back(first / header);
    for (const auto& dir : dirs_) candidates.push_back(dir / header);
    for (const auto& path : candidates) {
      if (auto text = ReadFile(path)) {
        auto* kept = new std::string(std::move(*text));
        return new IncludeResult(path.string(), kept->data(), kept->size(), kept);
      }
    }
    return nullptr;
  }
  std::filesystem::path source_;
  std::vector<std::filesystem::path> dirs_;
};

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> fields;
  std::string::size_type start = 0;
  while (true) {
    auto tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

std::optional<Job> ParseJob(const std::string& line, std::string& error) {
  auto fields = SplitTabs(line);
  if (fields.size() < 4) {
    error = "a job needs <output> <env> <validate env> <source>";
    return std::nullopt;
  }
  Job job{fields[0], fields[1], fields[2], fields[3], {}, {}};
  for (size_t i = 4; i < fields.size(); ++i) {
    const std::string& arg = fields[i];
    if (arg.rfind("-D", 0) == 0 && arg.size() > 2) {
      job.defines.push_back(arg.substr(2));
    } else if (arg.rfind("-I", 0) == 0 && arg.size() > 2) {
      job.include_dirs.push_back(arg.substr(2));
    } else {
      error = "unknown argument '" + arg + "'";
      return std::nullopt;
    }
  }
  return job;
}

// -DNAME=VALUE becomes "#define NAME VALUE", -DNAME "#define NAME", as glslangValidator's preamble.
std::string Preamble(const std::vector<std::string>& defines) {
  std::string text;
  for (std::string define : defines) {
    if (auto equal = define.find('='); equal != std::string::npos) define[equal] = ' ';
    text += "#define " + define + "\n";
  }
  return text;
}

// Not the layer's WriteCacheFileAtomically: that one makes private (0700/0600) cache entries,
// and these are build outputs the samples install for every user.
bool WriteWhole(const std::string& path, const std::vector<uint32_t>& words) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);  // Ninja makes it; Make does not
  const std::string temporary = path + ".tmp";
  bool written;
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(words.size() * 4));
    written = static_cast<bool>(out.flush());
  }
  if (written) {
    std::filesystem::rename(temporary, path, ec);
    if (!ec) return true;
  }
  std::filesystem::remove(temporary, ec);
  return false;
}

// Compiles and validates one job; on failure returns the message to print.
std::optional<std::string> Compile(const Job& job) {
  auto target = ParseTargetEnv(job.env);
  if (!target) return "unknown target environment '" + job.env + "'";
  auto text = ReadFile(job.source);
  if (!text) return "cannot read " + job.source;

  glslang::TShader shader(EShLangCompute);
  const char* strings[] = {text->c_str()};
  const int lengths[] = {static_cast<int>(text->size())};
  const char* names[] = {job.source.c_str()};
  shader.setStringsWithLengthsAndNames(strings, lengths, names, 1);
  std::string preamble = Preamble(job.defines);
  shader.setPreamble(preamble.c_str());
  shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
  shader.setEnvClient(glslang::EShClientVulkan, target->client);
  shader.setEnvTarget(glslang::EShTargetSpv, target->spirv);
  const auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
  Includer includer(job.source, job.include_dirs);
  if (!shader.parse(GetDefaultResources(), 100, false, messages, includer))
    return std::string(shader.getInfoLog()) + shader.getInfoDebugLog();

  glslang::TProgram program;
  program.addShader(&shader);
  if (!program.link(messages) || !program.mapIO()) return std::string(program.getInfoLog()) + program.getInfoDebugLog();

  std::vector<uint32_t> words;
  spv::SpvBuildLogger logger;
  glslang::SpvOptions options;
  glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), words, &logger, &options);
  if (std::string log = logger.getAllMessages(); !log.empty()) std::cerr << job.source << ": " << log;

  if (job.validate_env != "-") {
    auto env = ParseValidateEnv(job.validate_env);
    if (!env) return "unknown validation environment '" + job.validate_env + "'";
    spvtools::SpirvTools tools(*env);
    std::string diagnostics;
    tools.SetMessageConsumer([&](spv_message_level_t, const char*, const spv_position_t&, const char* message) {
      diagnostics += message;
      diagnostics += "\n";
    });
    if (!tools.Validate(words)) return "spirv-val (" + job.validate_env + ") rejects the module: " + diagnostics;
  }
  if (!WriteWhole(job.output, words)) return "cannot write " + job.output;
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  const bool keep_going = argc == 3 && std::string(argv[1]) == "--keep-going";
  if (argc != 2 && !keep_going) {
    std::cerr << "usage: glsl-batch [--keep-going] <jobs file>\n";
    return 2;
  }
  const char* jobs_path = argv[argc - 1];
  std::ifstream jobs(jobs_path);
  if (!jobs) {
    std::cerr << "glsl-batch: cannot read " << jobs_path << "\n";
    return 2;
  }
  glslang::InitializeProcess();
  int status = 0;
  std::string line;
  for (int number = 1; std::getline(jobs, line); ++number) {
    if (line.empty()) continue;
    std::string error;
    auto job = ParseJob(line, error);
    if (!job) {
      std::cerr << "glsl-batch: " << jobs_path << ":" << number << ": " << error << "\n";
      status = 2;
      break;
    }
    if (auto failure = Compile(*job)) {
      std::cerr << "glsl-batch: " << job->source << " -> " << job->output << ":\n" << *failure << "\n";
      status = 1;
      if (!keep_going) break;
    }
  }
  glslang::FinalizeProcess();
  return status;
}
