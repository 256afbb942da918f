// microbench: native int8 AMX FFN core loop with per-group scales
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>
#include <random>
struct alignas(64) Cfg { uint8_t p=1,s=0; uint8_t r[14]={}; uint16_t c[16]={64,64,64,64,64,64,64,64}; uint8_t rows[16]={16,16,16,16,16,16,16,16}; };
#ifndef MODE
#define MODE 0
#endif
#define T __attribute__((target("avx512f,avx512bw,avx512vl,amx-tile,amx-int8")))
constexpr int G=112; // groups (K=7168)
// variant 1: per group: C<-start tiles, dp, store to cbuf[g&1]; vector process previous group's buffer into acc (memory)
template<int NB> T void rowblock(const int8_t* a, int64_t stride, const uint8_t* b0, const uint8_t* b1,
   const float* s0, const float* s1, const int32_t* st, float* acc, int32_t* cbuf) {
  // acc: [NB*2][16][16]
  for (int i=0;i<NB*2*256;i++) acc[i]=0;
  auto vec=[&](int g) T {
    const int32_t* c=cbuf+(g&1)*1024;
    const __m512 v0=_mm512_loadu_ps(s0+g*16), v1=_mm512_loadu_ps(s1+g*16);
    for(int j=0;j<NB*2;j++){ const __m512 sv=(j&1)?v1:v0;
      for(int i=0;i<16;i++){ float* p=acc+j*256+i*16;
        _mm512_store_ps(p,_mm512_fmadd_ps(_mm512_cvtepi32_ps(MODE==4? _mm512_add_epi32(_mm512_load_si512(c+j*256+i*16),_mm512_set1_epi32(st[g*16+i])) : _mm512_load_si512(c+j*256+i*16)),sv,_mm512_load_ps(p)));}}
  };
  for(int g=0;g<G;g++){
    int32_t* c=cbuf+(g&1)*1024;
    const int32_t* sg=st+g*NB*256;
    if(MODE>=3){_tile_zero(0);_tile_zero(1);} else {_tile_loadd(0,sg,64); _tile_loadd(1,sg,64);}
    _tile_loadd(6,b0+g*1024,64); _tile_loadd(7,b1+g*1024,64);
    _tile_loadd(4,a+g*64,stride);
    _tile_dpbsud(0,4,6); _tile_dpbsud(1,4,7);
    if(MODE!=2){_tile_stored(0,c,64); _tile_stored(1,c+256,64);}
    if constexpr(NB==2){ if(MODE>=3){_tile_zero(2);_tile_zero(3);} else {_tile_loadd(2,sg+256,64); _tile_loadd(3,sg+256,64);}
      _tile_loadd(5,a+16*stride+g*64,stride); _tile_dpbsud(2,5,6); _tile_dpbsud(3,5,7);
      if(MODE!=2){_tile_stored(2,c+512,64); _tile_stored(3,c+768,64);}}
    if(MODE!=1 && MODE!=5 && g>0) vec(g-1);
  }
  vec(G-1);
}
int main(int argc,char**argv){
  syscall(SYS_arch_prctl,0x1023,18);
  Cfg cfg; _tile_loadconfig(&cfg);
  const int NB=argc>1?atoi(argv[1]):2; const int RB=4; const int TB=4; // row blocks, token-blocks of 16*NB
  int64_t K=G*64, stride=K;
  std::vector<int8_t> a(size_t(TB*NB*16*stride)); std::vector<uint8_t> b(size_t(RB*2*G*1024));
  std::vector<float> s(size_t(RB*2*G*16),0.01f); std::vector<int32_t> st(size_t(TB*G*NB*256),0);
  std::mt19937 r(1); for(auto&x:a)x=int8_t(r()%255-127); for(auto&x:b)x=uint8_t(r());
  alignas(64) static float acc[4*256]; alignas(64) static int32_t cbuf[2*1024];
  for(int rep=0;rep<8;rep++){
    auto t0=std::chrono::steady_clock::now(); int iters=20;
    for(int it=0;it<iters;it++) for(int tb=0;tb<TB;tb++) for(int rb=0;rb<RB;rb++){
      const uint8_t* b0=b.data()+size_t(rb*2)*G*1024; const uint8_t* b1=b0+G*1024;
      if(NB==2) rowblock<2>(a.data()+tb*32*stride,stride,b0,b1,s.data()+rb*2*G*16,s.data()+(rb*2+1)*G*16,st.data()+tb*G*512,acc,cbuf);
      else rowblock<1>(a.data()+tb*16*stride,stride,b0,b1,s.data()+rb*2*G*16,s.data()+(rb*2+1)*G*16,st.data()+tb*G*256,acc,cbuf);
    }
    double sec=std::chrono::duration<double>(std::chrono::steady_clock::now()-t0).count();
    double ops=2.0*iters*TB*RB*2*(NB*16)*16.0*K;
    printf("NB=%d %.0f GOP/s (%.1f%% of 6200)\n",NB,ops/sec/1e9,ops/sec/1e9/62);
  }
  _tile_release();
}
