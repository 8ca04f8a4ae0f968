"""性能对比脚本：与 PyTorch 同尺寸、同一次运行里并排测；在仓库根作为包运行（``python -m benchmarks.bench_gpt``）。"""
