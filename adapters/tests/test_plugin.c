/* Plugins with one defect each, for kda-oracle's tests of the plugin loader; built once per variant
 * (TEST_PLUGIN_VARIANT) as C99, which also proves kda_plugin.h is plain C.
 *   1 wrong ABI version     2 unknown profile        3 rejects, naming two rules (checks its contract)
 *   4 rejects, unknown rule 5 fails with a message   6 writes o[-1], before o's buffer
 *   7 exports no descriptor
 *   8 an ABI version 1 plugin (checks its contract) whose descriptor also sets the verify bits that
 *     version 2 added: it zeroes o, and fails, saying what it got, when a call's abi_version is not 1
 *     or its mode not prefill or decode
 *   9 declares KDA_MODE_VERIFY without a verify state source
 *  10 declares KDA_MEMORY_CUDA (refused by a kda-oracle built without CUDA); staged in host memory
 *     standing in for device 3, it writes o[-1] and, with a pool, the first 8 bytes of slot -1
 *  11 declares KDA_ARITHMETIC_BF16_OPERANDS (version 3)
 *  12 declares an arithmetic beyond enum kda_arithmetic */
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
    case 8: {
      int64_t b, t, h, j;
      const kda_tensor* o = &call->o;
      if (call->abi_version != 1 || (call->mode != KDA_MODE_PREFILL && call->mode != KDA_MODE_DECODE)) {
        snprintf(message, message_size, "called with abi_version %u, mode %d", (unsigned)call->abi_version, call->mode);
        return KDA_STATUS_FAILED;
      }
      for (b = 0; b < o->shape[0]; ++b)
        for (t = 0; t < o->shape[1]; ++t)
          for (h = 0; h < o->shape[2]; ++h)
            for (j = 0; j < o->shape[3]; ++j)
              ((float*)o->data)[b * o->strides[0] + t * o->strides[1] + h * o->strides[2] + j * o->strides[3]] = 0.0f;
      return KDA_STATUS_OK;
    }
    case 10: {
      const float x = 1.0f;
      if (call->memory != KDA_MEMORY_CUDA || call->device != 3) {
        snprintf(message, message_size, "called with memory %d, device %d", call->memory, call->device);
        return KDA_STATUS_FAILED;
      }
      memcpy((char*)call->o.data - sizeof x, &x, sizeof x);
      if (call->state_pool.present) memset((char*)call->state_pool.data - call->state_pool.strides[0] * 4, 0x7f, 8);
      return KDA_STATUS_OK;
    }
    case 6: {
      const float x = 1.0f;
      memcpy((char*)call->o.data - sizeof x, &x, sizeof x); /* o[-1] of a contiguous o at offset 0 */
      return KDA_STATUS_OK;
    }
    default: return KDA_STATUS_OK;
  }
}

static const kda_plugin descriptor = {
    TEST_PLUGIN_VARIANT == 1 ? 999u : TEST_PLUGIN_VARIANT == 8 ? 1u : KDA_PLUGIN_ABI_VERSION,
    "test-plugin",
    TEST_PLUGIN_VARIANT == 2 ? "no_such_profile" : "strict",
    KDA_BIT(KDA_MODE_PREFILL) | KDA_BIT(KDA_MODE_DECODE) |
        (TEST_PLUGIN_VARIANT == 8 || TEST_PLUGIN_VARIANT == 9 ? KDA_BIT(KDA_MODE_VERIFY) : 0u),
    KDA_BIT(KDA_F32),
    KDA_BIT(KDA_F32),
    KDA_BIT(KDA_F32),
    KDA_BIT(KDA_LAYOUT_VK),
    KDA_BIT(KDA_STATE_NONE) | KDA_BIT(KDA_STATE_DENSE) |
        (TEST_PLUGIN_VARIANT == 8 ? KDA_BIT(KDA_STATE_TABLE) | KDA_BIT(KDA_STATE_SCRATCH) : 0u),
    NULL,
    0,
    NULL,
    0,
    128,
    NULL,
    0,
    KDA_CAP_VARLEN | (TEST_PLUGIN_VARIANT == 3 || TEST_PLUGIN_VARIANT == 8 ? KDA_CAP_CHECKS_CONTRACT : 0u),
    TEST_PLUGIN_VARIANT == 10 ? KDA_MEMORY_CUDA : KDA_MEMORY_HOST,
    run,
    TEST_PLUGIN_VARIANT == 11 ? KDA_ARITHMETIC_BF16_OPERANDS : TEST_PLUGIN_VARIANT == 12 ? 7 : KDA_ARITHMETIC_FP32,
};

const kda_plugin* kda_plugin_descriptor(void) { return &descriptor; }

#else

KDA_PLUGIN_EXPORT int not_a_kda_plugin(void) { return 0; }

#endif
