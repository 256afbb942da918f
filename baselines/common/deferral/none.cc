// deferral = "none": every expert's output is combined in its own layer.
#include "baselines/common/components.h"
