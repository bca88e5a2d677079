// Reading the layer's "settings: ..." line (layer/settings.cpp, Describe), which it logs at
// info level at instance creation: what a test that asked for settings reads to know which
// ones the layer took (the environment and vk_layer_settings.txt override the API's).
#pragma once

#include <optional>
#include <string>

namespace cmtest {

// A setting's value in the layer's "settings: name=value name='text' ..." line; nullopt
// where the line does not name it. A quoted value ends at a quote before the next name
// or the end (paths may hold spaces).
inline std::optional<std::string> LoggedSetting(const std::string& line, const std::string& name) {
  const size_t at = line.find(" " + name + "=");
  if (at == std::string::npos) return std::nullopt;
  const size_t from = at + name.size() + 2;
  if (from < line.size() && line[from] == '\'') {
    for (size_t quote = line.find('\'', from + 1); quote != std::string::npos; quote = line.find('\'', quote + 1)) {
      const size_t next = quote + 1;
      const size_t equals = line.find('=', next);
      const bool last = next == line.size();
      const bool beforeName = next < line.size() && line[next] == ' ' && equals != std::string::npos &&
                              line.find_first_not_of("abcdefghijklmnopqrstuvwxyz_", next + 1) == equals;
      if (last || beforeName) return line.substr(from + 1, quote - from - 1);
    }
    return std::nullopt;
  }
  return line.substr(from, line.find(' ', from) - from);
}

}  // namespace cmtest
