#include "tools/catalog.h"

namespace moebench::tools {

const Registry& component_catalog() {
  static const Registry r = [] {
    Registry reg;
    return reg;
  }();
  return r;
}

}  // namespace moebench::tools
