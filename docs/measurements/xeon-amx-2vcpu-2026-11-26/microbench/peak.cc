#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <thread>
#include <vector>
#include <atomic>
struct alignas(64) Cfg { uint8_t p=1,s=0; uint8_t r[14]={}; uint16_t c[16]={64,64,64,64,64,64,64,64}; uint8_t rows[16]={16,16,16,16,16,16,16,16}; };
__attribute__((target("amx-tile,amx-bf16,amx-int8"))) double run(int iters, bool int8) {
  static Cfg cfg; _tile_loadconfig(&cfg);
  alignas(64) static thread_local uint16_t a[16*32], b[16*32];
  for(int i=0;i<512;i++){a[i]=0x3f80;b[i]=0x3f80;}
  _tile_zero(0);_tile_zero(1);_tile_zero(2);_tile_zero(3);
  _tile_loadd(4,a,64);_tile_loadd(5,a,64);_tile_loadd(6,b,64);_tile_loadd(7,b,64);
  auto t0=std::chrono::steady_clock::now();
  if(int8) for(int i=0;i<iters;i++){_tile_dpbssd(0,4,6);_tile_dpbssd(1,4,7);_tile_dpbssd(2,5,6);_tile_dpbssd(3,5,7);}
  else for(int i=0;i<iters;i++){_tile_dpbf16ps(0,4,6);_tile_dpbf16ps(1,4,7);_tile_dpbf16ps(2,5,6);_tile_dpbf16ps(3,5,7);}
  auto t1=std::chrono::steady_clock::now();
  _tile_release();
  double s=std::chrono::duration<double>(t1-t0).count();
  double ops= (int8? 2.0*16*16*64 : 2.0*16*16*32)*4*iters;
  return ops/s/1e9;
}
int main(int argc,char**argv){
  syscall(SYS_arch_prctl,0x1023,18);
  int threads=argc>1?atoi(argv[1]):1; bool int8=argc>2&&argv[2][0]=='i';
  for(int rep=0;rep<12;rep++){
    std::vector<double> r(threads); std::vector<std::thread> ts;
    for(int t=0;t<threads;t++) ts.emplace_back([&,t]{r[t]=run(2000000,int8);});
    for(auto&t:ts)t.join();
    double sum=0; for(double x:r){sum+=x; printf("%7.0f ",x);} printf(" total %7.0f GOP/s\n",sum);
  }
}
