<%doc>
Counter-based random numbers: Philox-4x32-10 keyed by the 64-bit seed, counter =
base counter + element index, so every value depends only on (seed, counter + i).
Parameters: name, dtype, distribution ("uniform" | "normal" | "integer"), n, index_t.
</%doc>\
<%namespace name="dt" file="/common/dtypes.mako"/>\
<%!
    from zyx.dtype import float32, float64
%>\
<%
    wide = dtype.name == "float64"
    calc = float64 if wide else float32
    ct = "double" if wide else "float"
    p = min(dtype.mantissa_bits, 24) if dtype.is_float else 0
%>\
/* zyx ${name}: ${n} ${distribution} values of ${dtype.name} (Philox-4x32-10) */
${dt.preamble([dtype, calc])}
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
    const ${index_t} i = get_global_id(0);
    if (i >= ${n}) return;
    const ulong ctr = zyx_counter + (ulong)i;
    const uint4 w = zyx_philox((uint4)((uint)ctr, (uint)(ctr >> 32), 0u, 0u), (uint2)(zyx_seed_lo, zyx_seed_hi));
% if distribution == "uniform":
%   if wide:
    const double value = (double)(((ulong)w.x << 21) ^ (ulong)(w.y >> 11)) * 0x1.0p-53;
%   else:
    const float value = (float)(w.x >> ${32 - p}) * ${float(2.0 ** -p)}f;
%   endif
    ${dt.store_converted(calc, dtype, "zyx_out", "i", "value")}
% elif distribution == "normal":
    const ${ct} u1 = ((${ct})w.x + (${ct})1) * (${ct})0x1.0p-32;
    const ${ct} u2 = (${ct})w.y * (${ct})0x1.0p-32;
    const ${ct} value = sqrt((${ct})-2 * log(u1)) * cospi((${ct})2 * u2);
    ${dt.store_converted(calc, dtype, "zyx_out", "i", "value")}
% else:
    const ulong bits = ((ulong)w.x << 32) | (ulong)w.y;
    const ulong r = zyx_range ? bits % zyx_range : bits;  /* 0: the full 64-bit range */
    zyx_out[i] = (${dtype.cl_storage})(zyx_low + (long)r);
% endif
}
