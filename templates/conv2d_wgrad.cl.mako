<%doc>
The weight gradient of a 2-D convolution for CPUs (zyx.kernels.conv): gw[o, c, kh, kw] = sum over
(n, oh, ow) of gy[n, oh, ow, o] * x[n, c, oh*sh + kh*dh - ph, ow*sw + kw*dw - pw], zero outside x.

A work item owns one vector of `vw` output channels by `cb` input channels of one group: cb * KH * KW
accumulator vectors in registers over the whole reduce. Per output pixel it loads the gradient's
channel vector once and broadcasts each of the cb * KH * KW input values it meets over it. The input
is read unpadded, in place: pixels whose window lies inside the input (all but a border) run the loop
body without tests, the border tests each row and column (so no padded copy of the input is made).

Layouts: gy (N, OH, OW, O) dense (channels last); x (N, C, H, W) at element strides (xsN, xsC, xsH,
xsW): NCHW or NHWC dense; out (Cg, KH, KW, O) dense. Grid: (O / vw * Cg / cb), work-groups of one.
Parameters: name, t, vw, cb, N, C, H, W, O, OH, OW, KH, KW, sh, sw, dh, dw, ph, pw, groups, xsN, xsC,
xsH, xsW.
</%doc>\
<%
    cg = C // groups
    og = O // groups
    vt = t + str(vw)
    # the output columns whose every kernel column lies inside the input: [lo_ow, hi_ow)
    lo_ow = min(-(-pw // sw), OW)
    hi_ow = max(min(OW, (W - 1 - (KW - 1) * dw + pw) // sw + 1), lo_ow)
%>\
/* zyx ${name}: ${t} conv weight gradient, x ${N}x${C}x${H}x${W} (strides ${xsN}, ${xsC}, ${xsH}, ${xsW}), gy ${N}x${OH}x${OW}x${O}, kernel ${KH}x${KW}, stride (${sh}, ${sw}), padding (${ph}, ${pw}), dilation (${dh}, ${dw}), groups ${groups}; ${cb} channel(s) x ${vt} a work item */
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
            const int zyx_ih0 = zyx_oh * ${sh} - ${ph};
            /* the row's base may lie before the input (top padding): read only where the row is inside */
            __global const ${t} *zyx_xr = zyx_x + (long)zyx_n * ${xsN} + (long)zyx_ci * ${xsC} + (long)zyx_ih0 * ${xsH};
% for kh in range(KH):
            const bool zyx_r${kh} = (uint)(zyx_ih0 + ${kh * dh}) < ${H}u;
% endfor
            const bool zyx_rows = ${" && ".join(f"zyx_r{kh}" for kh in range(KH))};
            /* the columns [zyx_lo, zyx_hi) read inside the row whatever kw: no tests there (all rows inside) */
            const int zyx_lo = zyx_rows ? ${lo_ow} : ${OW};
            const int zyx_hi = zyx_rows ? ${hi_ow} : ${OW};
            for (int zyx_ow = zyx_lo; zyx_ow < zyx_hi; ++zyx_ow) {
                const ${vt} zyx_gv = vload${vw}(0, zyx_g + zyx_ow * ${O});
                __global const ${t} *zyx_xp = zyx_xr + (long)(zyx_ow * ${sw} - ${pw}) * ${xsW};
% for c in range(cb):
%   for kh in range(KH):
%     for kw in range(KW):
                zyx_a${c}_${kh}_${kw} = fma((${vt})(zyx_xp[${c * xsC + kh * dh * xsH + kw * dw * xsW}]), zyx_gv, zyx_a${c}_${kh}_${kw});
%     endfor
%   endfor
% endfor
            }
            for (int zyx_ow = 0; zyx_ow < ${OW}; ++zyx_ow) {
                if (zyx_ow == zyx_lo) zyx_ow = zyx_hi;  /* the border columns only (every column of a border row) */
                if (zyx_ow >= ${OW}) break;
                const ${vt} zyx_gv = vload${vw}(0, zyx_g + zyx_ow * ${O});
                const int zyx_iw0 = zyx_ow * ${sw} - ${pw};
                __global const ${t} *zyx_xp = zyx_xr + (long)zyx_iw0 * ${xsW};
% for kw in range(KW):
                const bool zyx_k${kw} = (uint)(zyx_iw0 + ${kw * dw}) < ${W}u;
% endfor
% for c in range(cb):
%   for kh in range(KH):
%     for kw in range(KW):
                zyx_a${c}_${kh}_${kw} = fma((${vt})((zyx_r${kh} && zyx_k${kw}) ? zyx_xp[${c * xsC + kh * dh * xsH + kw * dw * xsW}] : (${t})(0)), zyx_gv, zyx_a${c}_${kh}_${kw});
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
