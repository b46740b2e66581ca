from tpsbench.cli import main

main()
