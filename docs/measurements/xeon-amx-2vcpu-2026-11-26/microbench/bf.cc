#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
struct alignas(64) Cfg { uint8_t p=1,s=0; uint8_t r[14]={}; uint16_t c[16]={64,64,64,64,64,64,64,64}; uint8_t rows[16]={16,16,16,16,16,16,16,16}; };
// 2x2 blocking: per k: load B0,B1 (from b + k*1024 stride 64), A0, A1 (from a rows stride sa), 4 dps
int main(int argc,char**argv){
  syscall(SYS_arch_prctl,0x1023,18);
  long bk=atol(argv[1]);   // bytes of B footprint (cycled)
  long sa=atol(argv[2]);   // A row stride bytes
  long ak=atol(argv[3]); long pd=argc>4?atol(argv[4]):0;   // A k footprint bytes per row (cycled)
  std::vector<uint16_t> a(32*sa/2+64, 0x3f80), b(bk/2*2+2048, 0x3f80);
  Cfg cfg; _tile_loadconfig(&cfg);
  _tile_zero(0);_tile_zero(1);_tile_zero(2);_tile_zero(3);
  long nb=bk/2048, na=ak/64;
  for(int rep=0;rep<5;rep++){
    long iters=2000000; auto t0=std::chrono::steady_clock::now();
    const char* A=(const char*)a.data(); const char* B=(const char*)b.data();
    long ib=0, ia=0;
    for(long i=0;i<iters;i++){
#if ORD==0
      _tile_loadd(6,B+ib*2048,64); _tile_loadd(7,B+ib*2048+1024,64);
      _tile_loadd(4,A+ia*64,sa); _tile_dpbf16ps(0,4,6); _tile_dpbf16ps(1,4,7);
      _tile_loadd(5,A+16*sa+ia*64,sa); _tile_dpbf16ps(2,5,6); _tile_dpbf16ps(3,5,7);
#else
      _tile_loadd(4,A+ia*64,sa); _tile_loadd(6,B+ib*2048,64); _tile_dpbf16ps(0,4,6);
      _tile_loadd(7,B+ib*2048+1024,64); _tile_dpbf16ps(1,4,7);
      _tile_loadd(5,A+16*sa+ia*64,sa); _tile_dpbf16ps(2,5,6); _tile_dpbf16ps(3,5,7);
#endif
      if(pd){const char* p=B+((ib+pd)%nb)*2048; for(int l=0;l<32;l++) _mm_prefetch(p+l*64,_MM_HINT_T0);}
      if(++ib==nb) ib=0; if(++ia==na) ia=0;
    }
    double s=std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count();
    double f=4.0*iters*2*16*16*32/s/1e9; printf("B %ldKB strideA %ld: %.0f GFLOP/s (%.0f%% of 3087/core)\n",bk/1024,sa,f,f/30.87);
  }
  _tile_release();
}
