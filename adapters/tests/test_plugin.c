/* Plugins with one defect each, for kda-oracle's tests of the plugin loader; built once per variant
 * (TEST_PLUGIN_VARIANT) as C99, which also proves kda_plugin.h is plain C.
 *   1 wrong ABI version     2 unknown profile        3 rejects, naming two rules (checks its contract)
 *   4 rejects, unknown rule 5 fails with a message   6 writes o[-1], before o's buffer
 *   7 exports no descriptor */
#include <stdio.h>
#include <string.h>

#include "kda/adapters/kda_plugin.h"

#if TEST_PLUGIN_VARIANT != 7

static int run(const kda_call* call, char* message, size_t message_size) {
  switch (TEST_PLUGIN_VARIANT) {
    case 3:
      snprintf(message, message_size,
               "state_pool_alignment: slot stride 3 elements must be a multiple of 16\nchunk_size: got %d",
               call->chunk_size);
      return KDA_STATUS_REJECTED;
    case 4: snprintf(message, message_size, "not_a_rule: made up"); return KDA_STATUS_REJECTED;
    case 5: snprintf(message, message_size, "launch failed: out of memory"); return KDA_STATUS_FAILED;
    case 6: {
      const float x = 1.0f;
      memcpy((char*)call->o.data - sizeof x, &x, sizeof x); /* o[-1] of a contiguous o at offset 0 */
      return KDA_STATUS_OK;
    }
    default: return KDA_STATUS_OK;
  }
}

static const kda_plugin descriptor = {
    TEST_PLUGIN_VARIANT == 1 ? 999u : KDA_PLUGIN_ABI_VERSION,
    "test-plugin",
    TEST_PLUGIN_VARIANT == 2 ? "no_such_profile" : "strict",
    KDA_BIT(KDA_MODE_PREFILL) | KDA_BIT(KDA_MODE_DECODE),
    KDA_BIT(KDA_F32),
    KDA_BIT(KDA_F32),
    KDA_BIT(KDA_F32),
    KDA_BIT(KDA_LAYOUT_VK),
    KDA_BIT(KDA_STATE_NONE) | KDA_BIT(KDA_STATE_DENSE),
    NULL,
    0,
    NULL,
    0,
    128,
    NULL,
    0,
    KDA_CAP_VARLEN | (TEST_PLUGIN_VARIANT == 3 ? KDA_CAP_CHECKS_CONTRACT : 0u),
    KDA_MEMORY_HOST,
    run,
};

const kda_plugin* kda_plugin_descriptor(void) { return &descriptor; }

#else

KDA_PLUGIN_EXPORT int not_a_kda_plugin(void) { return 0; }

#endif
