// prefetcher = "none": nothing is loaded ahead of need.
#include "baselines/common/components.h"
