// FlashCore: the tuning override every launcher offers to benchmarks. An environment variable may
// name one of the launcher's tile configurations (docs/kernels.md, the sweeps); anything else,
// or no variable, leaves the choice to the launcher's own per-shape rule.
#pragma once

#include <cstdlib>
#include <cstring>

namespace flashcore {

template <typename Config>
struct ConfigName {
  const char* name;
  Config config;
};

// The configuration the variable `var` names, or `fallback` when it is unset or names none.
template <typename Config, int N>
Config config_override(const char* var, const ConfigName<Config> (&names)[N], Config fallback) {
  const char* env = std::getenv(var);
  if (env == nullptr) return fallback;
  for (const ConfigName<Config>& n : names) {
    if (std::strcmp(env, n.name) == 0) return n.config;
  }
  return fallback;
}

}  // namespace flashcore
