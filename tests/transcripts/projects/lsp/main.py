import sys


def main():
    print("hello")


if __name__ == "__main__":
    main()
