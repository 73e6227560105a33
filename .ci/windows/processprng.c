/* bcryptprimitives.dll for Wine 8, which lacks it: Rust's standard library (1.78 and later)
 * asks ProcessPrng for random bytes at start, and a program without it ends before main.
 * ProcessPrng is given RtlGenRandom's bytes (SystemFunction036, advapi32), which Wine has.
 * Built with mingw-w64 and put in the Wine prefix's system32 by .ci/windows-env.sh; never
 * shipped (Windows 10 and later have the real one). */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk))
            return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
