<%doc>
The weight gradient of a 2-D convolution for CPUs (zyx.kernels.conv): gw[o, c, kh, kw] = sum over
(n, oh, ow) of gy[n, oh, ow, o] * xp[n, c, oh*sh + kh*dh, ow*sw + kw*dw], xp the padded input.

A work item owns one vector of `vw` output channels by `cb` input channels of one group: cb * KH * KW
accumulator vectors in registers over the whole reduce. Per output pixel it loads the gradient's
channel vector once and broadcasts each of the cb * KH * KW input values it meets over it.

Layouts: gy (N, OH, OW, O) dense (channels last); xp (N, C, Hp, Wp), already padded (no bounds
tests), at element strides (xsN, xsC, xsH, xsW): NCHW or NHWC dense; out (Cg, KH, KW, O) dense. Grid: (O / vw * Cg / cb), work-groups of one.
Parameters: name, t, vw, cb, N, C, Hp, Wp, O, OH, OW, KH, KW, sh, sw, dh, dw, groups, xsN, xsC, xsH, xsW.
</%doc>\
<%
    cg = C // groups
    og = O // groups
    vt = t + str(vw)
%>\
/* zyx ${name}: ${t} conv weight gradient, x ${N}x${C}x${Hp}x${Wp} (padded; strides ${xsN}, ${xsC}, ${xsH}, ${xsW}), gy ${N}x${OH}x${OW}x${O}, kernel ${KH}x${KW}, stride (${sh}, ${sw}), dilation (${dh}, ${dw}), groups ${groups}; ${cb} channel(s) x ${vt} a work item */
% if t == "double":
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
% endif
__kernel void ${name}(__global ${t} *restrict zyx_out, __global const ${t} *restrict zyx_gy,
                      __global const ${t} *restrict zyx_x)
{
    const int zyx_t = (int)get_global_id(0);
    const int zyx_o0 = (zyx_t % ${O // vw}) * ${vw};
    const int zyx_c0 = (zyx_t / ${O // vw}) * ${cb};
    const int zyx_ci = (zyx_o0 / ${og}) * ${cg} + zyx_c0;  /* the first input channel, in its group */
% for c in range(cb):
%   for kh in range(KH):
%     for kw in range(KW):
    ${vt} zyx_a${c}_${kh}_${kw} = (${vt})(0);
%     endfor
%   endfor
% endfor
    for (int zyx_n = 0; zyx_n < ${N}; ++zyx_n) {
        for (int zyx_oh = 0; zyx_oh < ${OH}; ++zyx_oh) {
            __global const ${t} *zyx_g = zyx_gy + ((long)(zyx_n * ${OH} + zyx_oh) * ${OW}) * ${O} + zyx_o0;
            __global const ${t} *zyx_xr = zyx_x + (long)zyx_n * ${xsN} + (long)zyx_ci * ${xsC} + (long)zyx_oh * ${sh * xsH};
            for (int zyx_ow = 0; zyx_ow < ${OW}; ++zyx_ow) {
                const ${vt} zyx_gv = vload${vw}(0, zyx_g + zyx_ow * ${O});
                __global const ${t} *zyx_xp = zyx_xr + zyx_ow * ${sw * xsW};
% for c in range(cb):
%   for kh in range(KH):
%     for kw in range(KW):
                zyx_a${c}_${kh}_${kw} = fma((${vt})(zyx_xp[${c * xsC + kh * dh * xsH + kw * dw * xsW}]), zyx_gv, zyx_a${c}_${kh}_${kw});
%     endfor
%   endfor
% endfor
            }
        }
    }
% for c in range(cb):
%   for kh in range(KH):
%     for kw in range(KW):
    vstore${vw}(zyx_a${c}_${kh}_${kw}, 0, zyx_out + (long)((zyx_c0 + ${c}) * ${KH * KW} + ${kh * KW + kw}) * ${O} + zyx_o0);
%     endfor
%   endfor
% endfor
}
