#!/bin/bash
# $1 moebench binary, $2 out folder: trace statistics JSON on generated workloads of several shapes and a real trace
mkdir -p $2; cd "$(git rev-parse --show-toplevel)"
export MOEBENCH_HOME=$(pwd)
M=$1
$M trace stats --model deepseek-v2-lite --seed 1 --sequences 16 --prompt-len 64 --decode-len 64 --json $2/ds.json > $2/ds.txt
$M trace stats --model mixtral-8x7b --seed 2 --sequences 8 --prompt-len 32 --decode-len 64 --batch 4 --json $2/mx.json > $2/mx.txt
$M trace stats --model qwen3-30b-a3b --seed 3 --sequences 8 --prompt-len 16 --decode-len 32 --phase decode --json $2/qw.json > $2/qw.txt
$M trace stats --model deepseek-v2-lite --seed 4 --sequences 8 --prompt-len 32 --decode-len 16 --phase prefill --h-trace 64 --json $2/ds2.json > $2/ds2.txt
$M trace gen --model mixtral-8x7b --sequences 4 --prompt-len 16 --decode-len 32 --top-p 4 --out $2/tp.safetensors > /dev/null
$M trace gen --model deepseek-v2-lite --sequences 4 --prompt-len 16 --decode-len 32 --no-probs --out $2/np.safetensors > /dev/null
for f in tp np; do $M trace stats $2/$f.safetensors --json $2/$f.json > $2/$f.txt; rm $2/$f.safetensors; done
echo ok
