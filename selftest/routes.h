// Which route the layer took for each case: its explain files (the dump_dir setting, one
// ".txt" per lowering: "<op> ...: register path; ..." or "portable path (<why>); ...").
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace selftest {

class Routes {
 public:
  // Explain files appear in `folder` (the layer's dump_dir for one pass); it is created
  // here and, unless kept, removed with this object. Files already there (a kept folder
  // of an earlier run) count only once the layer writes them again.
  Routes(std::filesystem::path folder, bool keep);
  ~Routes();
  Routes(const Routes&) = delete;
  Routes& operator=(const Routes&) = delete;

  const std::filesystem::path& folder() const { return folder_; }
  // The route of what the layer lowered since the last call: "registers", "portable (<why>)",
  // "registers and portable (<why>)", or "" when it explained nothing new.
  std::string Since();

 private:
  std::filesystem::path folder_;
  bool keep_;
  // Every explain file met, with when it was written: the layer rewrites a file of the same
  // name when it lowers the same module the same way again.
  std::map<std::filesystem::path, std::filesystem::file_time_type> seen_;
  bool Fresh(const std::filesystem::path& path);
};

}  // namespace selftest
