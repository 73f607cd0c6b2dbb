<%doc>
Counter-based random numbers from Philox-4x32-10 keyed by the 64-bit seed. Element i has
counter c = base + i; one Philox block (counter c / per_block) yields four 32-bit words,
shared by per_block consecutive counters, so every value depends only on (seed, c) and
never on the work-group size. Each work item computes one block and writes the values of
it that fall in [base, base + n).
- uniform up to float32: one word a value (4 a block);
- uniform float64 and integer: two words a value (2 a block);
- normal: Box-Muller on word pairs (2k, 2k+1): the even counter takes r*cos, the odd r*sin
  (4 a block).
Parameters: name, dtype, distribution ("uniform" | "normal" | "integer"), n,
per_block (values a block, ``values_per_block`` in zyx.kernels.random).
</%doc>\
<%namespace name="dt" file="/common/dtypes.mako"/>\
<%namespace name="fm" file="/common/math.mako"/>\
<%!
    from zyx.dtype import float32, float64
%>\
<%
    wide = dtype.name == "float64"
    calc = float64 if wide else float32
    ct = "double" if wide else "float"
    p = min(dtype.mantissa_bits, 24) if dtype.is_float else 0
    words = "xyzw"
%>\
/* zyx ${name}: ${n} ${distribution} values of ${dtype.name} (Philox-4x32-10, ${per_block} a block) */
${dt.preamble([dtype, calc])}
% if distribution == "normal" and not wide:
${fm.log_fn("float")}
${fm.sincos_turn_fn("float")}
% endif
/* One 32x32 -> 64-bit product gives both halves: PoCL calls mul_hi() out of line, which kept
   the work-group loop scalar (16M values: 2.9 s with mul_hi, 0.4 s like this, same bits). */
inline uint4 zyx_philox(uint4 c, uint2 k)
{
    uint x = c.x, y = c.y, z = c.z, w = c.w, k0 = k.x, k1 = k.y;
#pragma unroll
    for (int r = 0; r < 10; ++r) {
        const ulong p0 = (ulong)0xD2511F53u * x, p1 = (ulong)0xCD9E8D57u * z;
        const uint nx = (uint)(p1 >> 32) ^ y ^ k0, nz = (uint)(p0 >> 32) ^ w ^ k1;
        y = (uint)p1;
        w = (uint)p0;
        x = nx;
        z = nz;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return (uint4)(x, y, z, w);
}

__kernel void ${name}(__global ${dtype.cl_storage} *restrict zyx_out, const uint zyx_seed_lo,
                      const uint zyx_seed_hi, const ulong zyx_counter, const long zyx_low,
                      const ulong zyx_range)
{
    const ulong block = zyx_counter / ${per_block} + (ulong)get_global_id(0);
    if (block * ${per_block} >= zyx_counter + ${n}) return;
    const uint4 w = zyx_philox((uint4)((uint)block, (uint)(block >> 32), 0u, 0u), (uint2)(zyx_seed_lo, zyx_seed_hi));
% if distribution == "normal":
%   for pair in range(2):
    const ${ct} u${pair} = (${ct})w.${words[2 * pair + 1]} * (${ct})0x1.0p-32;
%     if wide:
    const double r${pair} = sqrt(-2.0 * log(((double)w.${words[2 * pair]} + 1.0) * 0x1.0p-32));
    const double s${pair} = sinpi(2.0 * u${pair}), c${pair} = cospi(2.0 * u${pair});
%     else:
    const float r${pair} = sqrt(-2.0f * zyx_log_float(((float)w.${words[2 * pair]} + 1.0f) * 0x1.0p-32f));
    float c${pair};
    const float s${pair} = zyx_sincos_turn_float(u${pair} < 1.0f ? u${pair} : 0.0f, &c${pair});  /* u rounds up to 1 */
%     endif
%   endfor
% endif
% for slot in range(per_block):
    {
        const ulong i = block * ${per_block} + ${slot} - zyx_counter;  /* wraps past n below the base */
        if (i < ${n}) {
%   if distribution == "uniform" and wide:
            const double value = (double)(((ulong)w.${words[2 * slot]} << 21) ^ (ulong)(w.${words[2 * slot + 1]} >> 11)) * 0x1.0p-53;
%   elif distribution == "uniform":
            const float value = (float)(w.${words[slot]} >> ${32 - p}) * ${float(2.0 ** -p)}f;
%   elif distribution == "normal":
            const ${ct} value = r${slot // 2} * ${"c" if slot % 2 == 0 else "s"}${slot // 2};
%   endif
%   if distribution == "integer":
            const ulong bits = ((ulong)w.${words[2 * slot]} << 32) | (ulong)w.${words[2 * slot + 1]};
            const ulong r = zyx_range ? bits % zyx_range : bits;  /* 0: the full 64-bit range */
            zyx_out[i] = (${dtype.cl_storage})(zyx_low + (long)r);
%   else:
            ${dt.store_converted(calc, dtype, "zyx_out", "i", "value")}
%   endif
        }
    }
% endfor
}
