#include "routes.h"

#include <fstream>
#include <set>
#include <system_error>
#include <vector>

namespace selftest {

Routes::Routes(std::filesystem::path folder, bool keep) : folder_(std::move(folder)), keep_(keep) {
  std::error_code ec;
  std::filesystem::create_directories(folder_, ec);
  for (const auto& entry : std::filesystem::directory_iterator(folder_, ec)) Fresh(entry.path());
}

bool Routes::Fresh(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::file_time_type written = std::filesystem::last_write_time(path, ec);
  auto [it, added] = seen_.try_emplace(path, written);
  if (added) return true;
  if (it->second == written) return false;
  it->second = written;
  return true;
}

Routes::~Routes() {
  std::error_code ec;
  if (!keep_) std::filesystem::remove_all(folder_, ec);
}

std::string Routes::Since() {
  // The new explain files: "<hash>.txt" (the module's lowering at vkCreateShaderModule) and
  // "<hash>.pipeline-<key>.txt" (at pipeline creation, specialized), not ".specialization.txt".
  // A pipeline's lowering is what runs: where there is one, the module's (whose
  // spec-constant shapes no layout matches) does not count.
  std::vector<std::filesystem::path> modules, pipelines;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(folder_, ec)) {
    const std::filesystem::path& path = entry.path();
    const std::string name = path.filename().string();
    if (path.extension() != ".txt" || name.find(".specialization.") != std::string::npos || !Fresh(path)) continue;
    (name.find(".pipeline-") != std::string::npos ? pipelines : modules).push_back(path);
  }
  bool registers = false;
  std::set<std::string> portable;  // the reasons
  for (const std::filesystem::path& path : pipelines.empty() ? modules : pipelines) {
    std::ifstream file(path);
    for (std::string line; std::getline(file, line);) {
      registers |= line.find(": register path") != std::string::npos;
      const size_t at = line.find(": portable path (");
      if (at == std::string::npos) continue;
      const size_t from = at + 17, to = line.find(");", from);
      portable.insert(line.substr(from, to == std::string::npos ? std::string::npos : to - from));
    }
  }
  std::string why;
  for (const std::string& reason : portable) why += (why.empty() ? "" : "; ") + reason;
  if (registers && !portable.empty()) return "registers and portable (" + why + ")";
  if (registers) return "registers";
  if (!portable.empty()) return "portable (" + why + ")";
  return "";
}

}  // namespace selftest
