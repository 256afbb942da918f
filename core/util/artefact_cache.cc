#include "core/util/artefact_cache.h"

#include <cstdlib>
#include <mutex>

namespace moebench {

namespace {
std::mutex g_mu;
bool g_set = false;
std::filesystem::path g_dir;
}  // namespace

std::filesystem::path artefact_cache_dir() {
  {
    std::lock_guard<std::mutex> lk(g_mu);
    if (g_set) return g_dir;
  }
  if (const char* c = std::getenv("MOEBENCH_CACHE"); c && *c) return c;
  return {};
}

ScopedArtefactCache::ScopedArtefactCache(std::filesystem::path dir) {
  std::lock_guard<std::mutex> lk(g_mu);
  had_ = g_set;
  previous_ = g_dir;
  g_set = true;
  g_dir = std::move(dir);
}

ScopedArtefactCache::~ScopedArtefactCache() {
  std::lock_guard<std::mutex> lk(g_mu);
  g_set = had_;
  g_dir = previous_;
}

}  // namespace moebench
